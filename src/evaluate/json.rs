//! Node indices as JSON, as every face prints them (the CLI's `evaluate`, `lattice` and
//! `anonymize` reports, the Python module's `pbg.evaluate`).

use serde_json::{Map, Value, json};

use crate::indices::{INDICES, Kind, NodeIndices, Present};
use crate::lattice::Lattice;

/// The `evaluate` fields of a node: `node`, `lattice_size`, then [`index_fields`].
pub fn node_json(ix: &NodeIndices, lattice: &Lattice, present: Present) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("node".into(), json!(ix.node));
    m.insert("lattice_size".into(), size_json(lattice));
    m.extend(index_fields(ix, present));
    m
}

/// Every index of [`crate::indices::INDICES`] in order (the optional ones only where `present` says the dataset
/// defines them; counts as integers), as JSON fields.
pub fn index_fields(ix: &NodeIndices, present: Present) -> Map<String, Value> {
    let mut m = Map::new();
    for info in INDICES.iter().filter(|i| present.has(i.kind)) {
        let v = match info.kind {
            Kind::Count => json!((info.value)(ix) as u64),
            Kind::Real | Kind::ClassReal | Kind::HierarchyReal => json!((info.value)(ix)),
        };
        m.insert(info.name.into(), v);
    }
    m
}

/// A lattice size as a JSON number, or as a decimal string beyond 2^64 − 1 (JSON numbers that
/// large are not exact in most readers).
pub fn size_json(lattice: &Lattice) -> Value {
    match u64::try_from(lattice.size_exact()) {
        Ok(n) if (n as u128) < u128::MAX => json!(n),
        _ => Value::String(lattice.size_decimal()),
    }
}
