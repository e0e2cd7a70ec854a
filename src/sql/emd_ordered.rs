//! `emd_ordered(sensitive, 'profile')`: t-closeness (ordered ground distance) of a group's
//! sensitive values against the named profile's input.

use std::sync::LazyLock;

use datafusion::logical_expr::Documentation;

use super::histogram::{
    Finish, HistogramAggregate, HistogramSpec, Profiles, distance_doc, no_param, profile_arg,
};

static DOC: LazyLock<Documentation> = LazyLock::new(|| {
    distance_doc(
        "emd_ordered",
        "t-closeness with ordered ground distance: the earth mover's distance over the sensitive \
         values ordered (by the sensitive hierarchy's rows when the profile has one, numerically \
         when every value is a number, else by text), (1/(M−1)) Σ_i |Σ_{j≤i} (p_E(v_j) − p(v_j))| \
         with M the number of distinct sensitive values in the profile's input.",
        "salaries 3k..11k (one each), group {3k, 4k, 5k}: 0.375",
        "SELECT zip AS z, emd_ordered(salary, 'salaries') AS t FROM people GROUP BY 1;",
    )
});

static SPEC: HistogramSpec = HistogramSpec {
    name: "emd_ordered",
    arity: 2,
    check: profile_arg,
    param: no_param,
    finish: Finish::Distance(|d| d.t_ordered),
    doc: || &DOC,
};

/// The `emd_ordered` aggregate over the profiles of `profiles`.
pub(super) fn emd_ordered(profiles: Profiles) -> HistogramAggregate {
    HistogramAggregate::with_profiles(&SPEC, profiles)
}
