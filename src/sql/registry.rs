//! Profiles and hierarchies known to the SQL functions, by name. The registry holds declarations
//! only: no row is read when a profile is declared. Each function call reads the profile's input
//! afresh through the calling session (its tables, its memory pool), so a table that changed is
//! seen as it is now.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, RwLock};

use datafusion::catalog::Session;
use datafusion::common::{DataFusionError, Result, plan_err};
use datafusion::execution::context::SessionState;
use datafusion::prelude::{DataFrame, SessionContext};

use crate::encode::Dataset;
use crate::evaluate::Evaluator;
use crate::hierarchy::Hierarchy;
use crate::input::block_on;
use crate::profile::Profile;

/// Named profile declarations and named hierarchies.
#[derive(Debug, Default)]
pub struct Registry {
    profiles: RwLock<HashMap<String, Profile>>,
    hierarchies: RwLock<HashMap<String, Arc<Hierarchy>>>,
    /// How a face that owns a foreign session reads its tables (the Python module streams them
    /// through the Arrow C stream interface); without it they are refused.
    foreign_tables: RwLock<Option<ForeignTables>>,
}

/// Reads a table of a foreign session by name, as a provider pbg's own session can scan.
#[derive(Clone)]
pub struct ForeignTables(pub Arc<ReadTable>);

/// The function behind [`ForeignTables`].
pub type ReadTable =
    dyn Fn(&str) -> Result<Arc<dyn datafusion::catalog::TableProvider>> + Send + Sync;

impl std::fmt::Debug for ForeignTables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ForeignTables")
    }
}

/// The context of the session a function is called in (its catalogs, configuration and runtime).
///
/// A session from another library (datafusion-python, through datafusion-ffi) is not a
/// `SessionState`: pbg then plans in a session of its own with the caller's settings. Its tables
/// are not read through its providers — datafusion-ffi makes the other library enter runtime
/// handles it got from pbg as raw memory, which crashed the interpreter in testing — but through
/// the face's [`ForeignTables`] (see [`Registry::context_with_table`]).
pub fn context_of(session: &dyn Session) -> Result<SessionContext> {
    if let Some(state) = session.as_any().downcast_ref::<SessionState>() {
        return Ok(SessionContext::new_with_state(state.clone()));
    }
    Ok(crate::input::context_with(session.config().clone()))
}

/// Whether `session` comes from another library (see [`context_of`]).
pub fn is_foreign(session: &dyn Session) -> bool {
    session.as_any().downcast_ref::<SessionState>().is_none()
}

/// Why a table named in a profile cannot be read from a foreign session, and what to do instead.
pub fn foreign_tables_hint(function: &str, table: &str) -> DataFusionError {
    DataFusionError::Plan(format!(
        "{function}: table `{table}` is registered in another library's session (datafusion-python), which pbg cannot read across datafusion-ffi: name the data by path in the profile (input = \"people/\"), or use pbg.Profile(input=ctx.table(\"{table}\")) (a DataFrame, pyarrow Table or polars DataFrame streams to pbg through the Arrow C stream interface)"
    ))
}

fn lock_error() -> DataFusionError {
    DataFusionError::Internal("pbg registry lock poisoned".into())
}

impl Registry {
    /// Sets how tables of foreign sessions are read (see [`ForeignTables`]).
    pub fn set_foreign_tables(&self, tables: ForeignTables) -> Result<()> {
        *self.foreign_tables.write().map_err(|_| lock_error())? = Some(tables);
        Ok(())
    }

    /// The context in which `function`, called in `session`, reads `profile`: [`context_of`],
    /// with the profile's table made readable (see [`Registry::context_with_table`]).
    pub fn context_for(
        &self,
        function: &str,
        session: &dyn Session,
        profile: &Profile,
    ) -> Result<SessionContext> {
        match &profile.input {
            crate::input::Input::Table(t) => self.context_with_table(function, session, t),
            crate::input::Input::Path(_) => context_of(session),
        }
    }

    /// [`context_of`] `session`, holding `table`: a foreign session's table (or one pbg's own
    /// session lacks, as when the distance aggregates read a profile outside any session) is
    /// registered through [`ForeignTables`]; without them a foreign session's table is refused.
    pub fn context_with_table(
        &self,
        function: &str,
        session: &dyn Session,
        table: &str,
    ) -> Result<SessionContext> {
        let ctx = context_of(session)?;
        let tables = self
            .foreign_tables
            .read()
            .map_err(|_| lock_error())?
            .clone();
        let missing = !ctx.table_exist(table).unwrap_or(false);
        match tables {
            Some(tables) if missing || is_foreign(session) => {
                ctx.register_table(table, (tables.0)(table)?)?;
            }
            None if is_foreign(session) => return Err(foreign_tables_hint(function, table)),
            _ => {}
        }
        Ok(ctx)
    }

    /// Declares (or replaces) profile `name`. Hierarchies that need no data (ARX files, inline
    /// tables) are built now and become available to `generalize` as `name.qi` and `qi`; the
    /// data-driven kinds are built from the data by each query that reads it.
    pub fn declare(&self, name: &str, profile: Profile) -> Result<()> {
        for q in &profile.qis {
            if q.hierarchy.is_data_driven() {
                continue;
            }
            let h = q
                .hierarchy
                .build(&q.name, &[])
                .map_err(|e| DataFusionError::Plan(format!("profile '{name}': {e}")))?;
            self.add_qi_hierarchy(name, &q.name, Arc::new(h));
        }
        self.profiles
            .write()
            .map_err(|_| lock_error())?
            .insert(name.to_string(), profile);
        Ok(())
    }

    /// Declares a TOML profile file under `name` (nothing is read but the file and its
    /// hierarchies).
    pub fn add_profile_file(&self, name: &str, path: &Path) -> Result<Profile> {
        let profile = Profile::from_toml_file(path)
            .map_err(|e| DataFusionError::Plan(format!("profile '{name}': {e}")))?;
        self.declare(name, profile.clone())?;
        Ok(profile)
    }

    fn add_qi_hierarchy(&self, profile: &str, qi: &str, h: Arc<Hierarchy>) {
        if let Ok(mut map) = self.hierarchies.write() {
            map.insert(qi.to_string(), h.clone());
            map.insert(format!("{profile}.{qi}"), h);
        }
    }

    /// Every named hierarchy (what `generalize` resolves names in), sorted by name.
    pub fn hierarchies(&self) -> Vec<(String, Arc<Hierarchy>)> {
        let mut all: Vec<(String, Arc<Hierarchy>)> = match self.hierarchies.read() {
            Ok(h) => h.iter().map(|(n, h)| (n.clone(), h.clone())).collect(),
            Err(_) => Vec::new(),
        };
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// Adds a hierarchy under `name`.
    pub fn add_hierarchy(&self, name: &str, hierarchy: Arc<Hierarchy>) {
        if let Ok(mut h) = self.hierarchies.write() {
            h.insert(name.to_string(), hierarchy);
        }
    }

    /// Every declared profile.
    pub fn profiles(&self) -> Result<Vec<Profile>> {
        let p = self.profiles.read().map_err(|_| lock_error())?;
        Ok(p.values().cloned().collect())
    }

    /// The declaration of profile `name`, or a planning error listing the known ones.
    pub fn declaration(&self, function: &str, name: &str) -> Result<Profile> {
        let p = self.profiles.read().map_err(|_| lock_error())?;
        match p.get(name) {
            Some(profile) => Ok(profile.clone()),
            None => {
                let mut known: Vec<&String> = p.keys().collect();
                known.sort();
                plan_err!(
                    "{function}: unknown profile '{name}' (declared: {known:?}); declare it with SELECT * FROM pbg_profile('{name}', '<profile TOML>')"
                )
            }
        }
    }

    fn dataset(
        &self,
        function: &str,
        name: &str,
        session: &dyn Session,
        read: Read<'_>,
    ) -> Result<Arc<Evaluator>> {
        let profile = self.declaration(function, name)?;
        let ctx = self.context_for(function, session, &profile)?;
        let read = async {
            match read {
                Read::Rows => crate::statistics::rows_in(&ctx, &profile).await,
                Read::Statistics => crate::statistics::statistics_in(&ctx, &profile).await,
                Read::StatisticsFrom(frame) => {
                    crate::statistics::statistics_from(&ctx, &profile, frame).await
                }
            }
        };
        let wrap = |e: crate::PbgError| {
            DataFusionError::Plan(format!("{function}: profile '{name}': {e}"))
        };
        let ds: Dataset = block_on(read).map_err(wrap)?.map_err(wrap)?;
        for q in &ds.qis {
            self.add_qi_hierarchy(name, &q.name, q.hierarchy.clone());
        }
        let ev = Evaluator::new(Arc::new(ds)).map_err(wrap)?;
        Ok(Arc::new(ev))
    }

    /// Profile `name` read now through `session` into class statistics (every node index, no
    /// per-tuple vectors), ready to evaluate.
    pub fn statistics(
        &self,
        function: &str,
        name: &str,
        session: &dyn Session,
    ) -> Result<Arc<Evaluator>> {
        self.dataset(function, name, session, Read::Statistics)
    }

    /// [`Self::statistics`] read through `frame`, the profile's input as the caller opened (and
    /// pinned) it, not through a new open of its name: a release planned over `frame` reads the
    /// tables its statistics counted even if the name is given another table meanwhile.
    pub fn statistics_from(
        &self,
        function: &str,
        name: &str,
        session: &dyn Session,
        frame: &DataFrame,
    ) -> Result<Arc<Evaluator>> {
        self.dataset(function, name, session, Read::StatisticsFrom(frame))
    }

    /// Profile `name` read now through `session` row by row (per-tuple vectors need the rows).
    pub fn rows(
        &self,
        function: &str,
        name: &str,
        session: &dyn Session,
    ) -> Result<Arc<Evaluator>> {
        self.dataset(function, name, session, Read::Rows)
    }

    /// The hierarchy `name`, or an error listing the known ones.
    pub fn hierarchy(&self, function: &str, name: &str) -> Result<Arc<Hierarchy>> {
        let h = self.hierarchies.read().map_err(|_| lock_error())?;
        match h.get(name) {
            Some(x) => Ok(x.clone()),
            None => {
                let mut known: Vec<&String> = h.keys().collect();
                known.sort();
                plan_err!(
                    "{function}: unknown hierarchy '{name}' (registered: {known:?}; hierarchies built from the data appear once a pbg function has read their profile)"
                )
            }
        }
    }
}

/// What [`Registry`] reads of a profile's input.
enum Read<'a> {
    /// Every row, in file order (per-tuple vectors).
    Rows,
    /// Class statistics, the input opened now.
    Statistics,
    /// Class statistics through a frame the caller opened.
    StatisticsFrom(&'a DataFrame),
}
