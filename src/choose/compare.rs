//! Comparison of two nodes by one property vector (EDBT 2009): binary indices both ways, ranks and
//! the strong-dominance relation.

use serde::Serialize;

use crate::dominance::{Relation, relation};
use crate::error::{PbgError, Result};
use crate::evaluate::Evaluator;
use crate::properties::PropertyVectors;
use crate::quality::{binary, coverage, hypervolume_ln, rank, spread};

/// The property compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Property {
    /// P_equiv, class size (higher is better).
    Equiv,
    /// P_sens, count of the sensitive value in the class (higher is better).
    Sens,
    /// Per-tuple GLM (lower is better).
    Glm,
    /// Per-tuple CM (lower is better; needs a class attribute).
    Cm,
}

impl Property {
    /// Parses `equiv`, `sens`, `glm` or `cm`.
    pub fn parse(text: &str) -> Result<Self> {
        match text {
            "equiv" => Ok(Property::Equiv),
            "sens" => Ok(Property::Sens),
            "glm" => Ok(Property::Glm),
            "cm" => Ok(Property::Cm),
            other => Err(PbgError::argument(
                "property",
                format!("unknown property `{other}` (use equiv, sens, glm, cm)"),
            )),
        }
    }
}

/// The comparison of node A with node B.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// P_cov(A, B).
    pub cov_ab: f64,
    /// P_cov(B, A).
    pub cov_ba: f64,
    /// P_spr(A, B).
    pub spr_ab: f64,
    /// P_spr(B, A).
    pub spr_ba: f64,
    /// P_binary(A, B).
    pub binary_ab: u64,
    /// P_binary(B, A).
    pub binary_ba: u64,
    /// log10 P_hv(A, B); `None` when the hypervolume is 0.
    pub hv_log10_ab: Option<f64>,
    /// log10 P_hv(B, A).
    pub hv_log10_ba: Option<f64>,
    /// Distance of A's vector to the point of interest (the best possible vector).
    pub rank_a: f64,
    /// Distance of B's vector to the point of interest.
    pub rank_b: f64,
    /// Strong dominance between the oriented vectors.
    #[serde(serialize_with = "relation_name")]
    pub relation: Relation,
}

fn relation_name<S: serde::Serializer>(r: &Relation, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(r.name())
}

/// The property vector oriented so that higher is better (losses become retained utility:
/// #QI − GLM, 1 − CM) and the best possible vector (the point of interest of the rank index).
fn oriented(
    ev: &Evaluator,
    v: &PropertyVectors,
    property: Property,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let ds = ev.dataset();
    let n = ds.num_rows();
    Ok(match property {
        Property::Equiv => (
            v.p_equiv.iter().map(|&x| x as f64).collect(),
            vec![n as f64; n],
        ),
        Property::Sens => (
            v.p_sens.iter().map(|&x| x as f64).collect(),
            ds.sensitive
                .codes
                .values()
                .iter()
                .map(|&s| ds.sensitive.counts[s as usize] as f64)
                .collect(),
        ),
        Property::Glm => {
            let q = ds.qis.len() as f64;
            (v.p_glm.iter().map(|&x| q - x).collect(), vec![q; n])
        }
        Property::Cm => {
            let cm = v.p_cm.as_ref().ok_or_else(|| {
                PbgError::argument("property", "cm needs a class attribute in the profile")
            })?;
            (cm.iter().map(|&x| 1.0 - x as f64).collect(), vec![1.0; n])
        }
    })
}

/// Compares nodes `a` and `b` by `property`.
pub fn compare(ev: &Evaluator, a: &[u8], b: &[u8], property: Property) -> Result<Comparison> {
    let (_, va) = ev.property_vectors(a)?;
    let (_, vb) = ev.property_vectors(b)?;
    let (da, best) = oriented(ev, &va, property)?;
    let (db, _) = oriented(ev, &vb, property)?;
    let log10 = |ln: f64| (ln > f64::NEG_INFINITY).then(|| ln / std::f64::consts::LN_10);
    Ok(Comparison {
        cov_ab: coverage(&da, &db),
        cov_ba: coverage(&db, &da),
        spr_ab: spread(&da, &db),
        spr_ba: spread(&db, &da),
        binary_ab: binary(&da, &db),
        binary_ba: binary(&db, &da),
        hv_log10_ab: log10(hypervolume_ln(&da, &db)),
        hv_log10_ba: log10(hypervolume_ln(&db, &da)),
        rank_a: rank(&da, &best, 0.0),
        rank_b: rank(&db, &best, 0.0),
        relation: relation(&da, &db),
    })
}
