//! `emd_hierarchical(sensitive, 'profile')`: t-closeness (hierarchical ground distance) of a
//! group's sensitive values against the named profile's input and sensitive hierarchy.

use std::sync::LazyLock;

use datafusion::logical_expr::Documentation;

use super::histogram::{
    Finish, HistogramAggregate, HistogramSpec, Profiles, distance_doc, no_param, profile_arg,
};

static DOC: LazyLock<Documentation> = LazyLock::new(|| {
    distance_doc(
        "emd_hierarchical",
        "t-closeness with hierarchical ground distance: the earth mover's distance over the \
         profile's sensitive hierarchy (Li, Li & Venkatasubramanian, ICDE 2007), moving mass \
         between two leaves costing the level of their lowest common group over the hierarchy's \
         height. NULL when the profile has no sensitive hierarchy.",
        "the ICDE 2007 disease classes of Table 4: 7/27, 8/27 and 5/27",
        "SELECT substr(zip, 1, 4) AS z, emd_hierarchical(disease, 'patients') AS t \
         FROM patients GROUP BY 1;",
    )
});

static SPEC: HistogramSpec = HistogramSpec {
    name: "emd_hierarchical",
    arity: 2,
    check: profile_arg,
    param: no_param,
    finish: Finish::Distance(|d| d.t_hierarchical),
    doc: || &DOC,
};

/// The `emd_hierarchical` aggregate over the profiles of `profiles`.
pub(super) fn emd_hierarchical(profiles: Profiles) -> HistogramAggregate {
    HistogramAggregate::with_profiles(&SPEC, profiles)
}
