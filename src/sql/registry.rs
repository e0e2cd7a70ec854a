//! Profiles and hierarchies known to the SQL functions, by name.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, RwLock};

use datafusion::common::{DataFusionError, Result, plan_err};

use crate::encode::Dataset;
use crate::evaluate::Evaluator;
use crate::hierarchy::Hierarchy;
use crate::profile::Profile;

/// Named profiles (loaded and encoded once) and named hierarchies.
#[derive(Debug, Default)]
pub struct Registry {
    profiles: RwLock<HashMap<String, Arc<Evaluator>>>,
    hierarchies: RwLock<HashMap<String, Arc<Hierarchy>>>,
}

fn external(e: crate::PbgError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

impl Registry {
    /// Adds a profile under `name`; its hierarchies become available to `generalize` under their QI
    /// names and as `name.qi`.
    pub fn add_profile(&self, name: &str, evaluator: Arc<Evaluator>) {
        if let Ok(mut h) = self.hierarchies.write() {
            for q in &evaluator.dataset().qis {
                h.insert(q.name.clone(), q.hierarchy.clone());
                h.insert(format!("{name}.{}", q.name), q.hierarchy.clone());
            }
        }
        if let Ok(mut p) = self.profiles.write() {
            p.insert(name.to_string(), evaluator);
        }
    }

    /// Loads a TOML profile and adds it under `name`.
    pub fn add_profile_file(&self, name: &str, path: &Path) -> Result<Arc<Evaluator>> {
        let profile = Profile::from_toml_file(path).map_err(external)?;
        self.add_loaded(name, &profile)
    }

    /// Loads a profile's data and adds it under `name`.
    pub fn add_loaded(&self, name: &str, profile: &Profile) -> Result<Arc<Evaluator>> {
        let ds = Dataset::load(profile).map_err(external)?;
        let ev = Arc::new(Evaluator::new(Arc::new(ds)).map_err(external)?);
        self.add_profile(name, ev.clone());
        Ok(ev)
    }

    /// Adds a hierarchy under `name`.
    pub fn add_hierarchy(&self, name: &str, hierarchy: Arc<Hierarchy>) {
        if let Ok(mut h) = self.hierarchies.write() {
            h.insert(name.to_string(), hierarchy);
        }
    }

    /// The profile `name`, or a planning error listing the known ones.
    pub fn profile(&self, function: &str, name: &str) -> Result<Arc<Evaluator>> {
        let p = self
            .profiles
            .read()
            .map_err(|_| DataFusionError::Internal("registry lock".into()))?;
        match p.get(name) {
            Some(ev) => Ok(ev.clone()),
            None => {
                let mut known: Vec<&String> = p.keys().collect();
                known.sort();
                plan_err!("{function}: unknown profile '{name}' (registered: {known:?})")
            }
        }
    }

    /// The hierarchy `name`, or an error listing the known ones.
    pub fn hierarchy(&self, function: &str, name: &str) -> Result<Arc<Hierarchy>> {
        let h = self
            .hierarchies
            .read()
            .map_err(|_| DataFusionError::Internal("registry lock".into()))?;
        match h.get(name) {
            Some(x) => Ok(x.clone()),
            None => {
                let mut known: Vec<&String> = h.keys().collect();
                known.sort();
                plan_err!("{function}: unknown hierarchy '{name}' (registered: {known:?})")
            }
        }
    }
}
