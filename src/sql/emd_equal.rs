//! `emd_equal(sensitive, 'profile')`: t-closeness (equal ground distance) of a group's sensitive
//! values against the named profile's input.

use std::sync::LazyLock;

use datafusion::logical_expr::Documentation;

use super::histogram::{
    Finish, HistogramAggregate, HistogramSpec, Profiles, distance_doc, no_param, profile_arg,
};

static DOC: LazyLock<Documentation> = LazyLock::new(|| {
    distance_doc(
        "emd_equal",
        "t-closeness with equal ground distance of a group: the earth mover's distance (here the \
         total variation distance ½ Σ |p_E(s) − p(s)|) between the distribution of the argument's \
         values in the group and the distribution of the sensitive attribute over the whole input \
         of the named profile. The group is t-close for every t at or above this value.",
        "p_E = (1/3, 1/3, 1/3) on three of six values whose input shares are (1, 2, 2, 1, 2, \
         1)/9: ½ (2/9 + 2/9 + 1/9 + 1/9 + 2/9 + 2/9) = 5/9",
        "SELECT max(t) FROM (SELECT emd_equal(occupation, 'adult') AS t FROM adult \
         GROUP BY generalize(age, 'age', 3), sex);",
    )
});

static SPEC: HistogramSpec = HistogramSpec {
    name: "emd_equal",
    arity: 2,
    check: profile_arg,
    param: no_param,
    finish: Finish::Distance(|d| d.t_equal),
    doc: || &DOC,
};

/// The `emd_equal` aggregate over the profiles of `profiles`.
pub(super) fn emd_equal(profiles: Profiles) -> HistogramAggregate {
    HistogramAggregate::with_profiles(&SPEC, profiles)
}
