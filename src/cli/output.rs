//! Rendering of node indices as JSON objects and key/value tables.

use pbg::NodeIndices;
use serde_json::{Map, Value, json};

/// The `evaluate` fields of a node, in the documented key order.
pub fn indices_json(ix: &NodeIndices, lattice_size: usize, with_cm: bool) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("node".into(), json!(ix.node));
    m.insert("lattice_size".into(), json!(lattice_size));
    m.insert("classes".into(), json!(ix.classes));
    m.insert("k".into(), json!(ix.k));
    m.insert("max_class".into(), json!(ix.max_class));
    m.insert("l_distinct".into(), json!(ix.l_distinct));
    m.insert("l_entropy".into(), json!(ix.l_entropy));
    m.insert("l_probabilistic".into(), json!(ix.l_probabilistic));
    m.insert("suppressed".into(), json!(ix.suppressed));
    m.insert("glm".into(), json!(ix.glm));
    m.insert("s_k".into(), json!(ix.s_k));
    m.insert("s_l".into(), json!(ix.s_l));
    if with_cm {
        m.insert("cm".into(), json!(ix.cm));
    }
    m
}

/// A two-column text table of a JSON object (arrays abbreviated).
pub fn key_value_table(m: &Map<String, Value>) -> String {
    let width = m.keys().map(String::len).max().unwrap_or(0);
    let mut out = String::new();
    for (k, v) in m {
        let text = match v {
            Value::Array(a) if a.len() > 12 => format!("[{} values]", a.len()),
            other => other.to_string(),
        };
        out.push_str(&format!("{k:<width$}  {text}\n"));
    }
    out
}
