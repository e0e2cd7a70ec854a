//! `pbg_anonymize('profile', 'L1,L2,..')` or `pbg_anonymize('profile', 'pick', 'k>=10,l>=3' [, 'glm'])`:
//! the release of a node as a view — a logical plan over the profile's input that generalizes each
//! QI, passes the other columns through, drops identifiers and filters out the suppressed classes.
//! The class statistics are read (and, with `'pick'`, the node chosen: the feasible node that
//! minimizes the given index, default `glm`) when the query is planned; the rows stream when it
//! runs, so `COPY ... TO` writes a release of any size, partitioned or not. A pick suppresses as
//! `pbg anonymize --pick` does: by the profile's `suppression_rule`, else by the requirement rule
//! (only the classes that fail a requirement). A view over it is refused once the rows under it
//! have changed (`pinned_input`). Check what was written with `pbg_verify`.
//!
//! ```sql
//! COPY (SELECT * FROM pbg_anonymize('adult', 'pick', 'k>=10,l>=3', 'glm'))
//!   TO 'out/adult/' STORED AS PARQUET PARTITIONED BY (sex);
//! ```

/// The usage line `\\f` of `pbg sql` shows.
pub const USAGE: &str = "pbg_anonymize('profile', 'L1,..' | 'pick', 'k>=10,l>=3' [, 'glm']): the release of a node, as a view";

use std::sync::Arc;

use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{Result, plan_err};
use datafusion::datasource::MemTable;
use datafusion::prelude::DataFrame;

use super::pinned_input::pin_scans;
use super::registry::Registry;
use super::steady_input::unsteady_input;
use super::table::{arity, plan, string_arg};
use crate::input::{self, block_on};
use crate::policy::{Policy, PolicyText, pick};
use crate::release::{release_plan, same_columns};

const NAME: &str = "pbg_anonymize";

/// `df`'s rows as they are now, in a memory table of `ctx`.
fn snapshot(ctx: &datafusion::prelude::SessionContext, df: DataFrame) -> Result<DataFrame> {
    let schema = Arc::new(df.schema().as_arrow().clone());
    let batches = block_on(df.collect()).map_err(|e| plan(NAME, e))??;
    let table = MemTable::try_new(schema, vec![batches])?;
    ctx.read_table(Arc::new(table))
}

/// The `pbg_anonymize` table function.
#[derive(Debug)]
pub struct PbgAnonymizeFunc {
    registry: Arc<Registry>,
}

impl PbgAnonymizeFunc {
    /// Creates the function over a registry.
    pub fn new(registry: Arc<Registry>) -> Self {
        PbgAnonymizeFunc { registry }
    }
}

impl TableFunctionImpl for PbgAnonymizeFunc {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let exprs = args.exprs();
        arity(
            NAME,
            exprs,
            2,
            4,
            "pbg_anonymize('profile', 'L1,L2,..') or pbg_anonymize('profile', 'pick', 'k>=10,l>=3' [, 'glm'])",
        )?;
        let name = string_arg(NAME, exprs, 0, "the profile")?;
        let how = string_arg(NAME, exprs, 1, "the node (or 'pick')")?;
        let profile = self.registry.declaration(NAME, &name)?;
        // The input is opened and pinned before its statistics are read: a view keeps this plan,
        // and the rows it releases must be the ones the statistics counted.
        let ctx = self.registry.context_for(NAME, args.session(), &profile)?;
        let df = block_on(input::open(&ctx, &profile.input, profile.delimiter))
            .map_err(|e| plan(NAME, e))?
            .map_err(|e| plan(NAME, e))?;
        if let Some(why) = unsteady_input(df.logical_plan())? {
            return plan_err!(
                "{NAME}: its input ({}) {why}: the class statistics and the rows, read by two queries, would be of different tables (a class could fall below the requirements). Store the rows first (CREATE TABLE ... AS SELECT ...) and anonymize that table",
                profile.input.as_path().display()
            );
        }
        // On a cluster the pins are checked on the client when a query is sent, and the
        // scheduler is given the tables below them (`cluster_pins`).
        let table = profile.input.as_path().display().to_string();
        let (mut df, unpinned) = pin_scans(&ctx, NAME, &table, df)?;
        if unpinned {
            // A table whose rows cannot be pinned (another library's, such as a datafusion-python
            // table through datafusion-ffi) is read once, now, into memory: the statistics and
            // the release are then of the same rows. Read twice, a file rewritten in between
            // was released under the old statistics, with classes below the k required.
            df = snapshot(&ctx, df)?;
        }
        let mut ev = match &profile.input {
            // A table's name is looked up again by a new open: read the statistics through this
            // plan, whose tables the release reads (a `CREATE OR REPLACE` in between would
            // otherwise give the statistics of one table and the rows of another).
            input::Input::Table(_) => {
                self.registry
                    .statistics_from(NAME, &name, args.session(), &df)?
            }
            // Files are read again (keyed as read: faster), and a file changed since the pin
            // refuses the release's scan.
            input::Input::Path(_) => self.registry.statistics(NAME, &name, args.session())?,
        };
        let node = if how.trim().eq_ignore_ascii_case("pick") {
            let require = match exprs.len() {
                2 => None,
                _ => Some(string_arg(NAME, exprs, 2, "the requirements")?),
            };
            let minimize = match exprs.len() {
                4 => string_arg(NAME, exprs, 3, "the index to minimize")?,
                _ => "glm".to_string(),
            };
            let text = PolicyText {
                comparator: Some("measure".into()),
                require,
                minimize: Some(minimize),
                ..PolicyText::default()
            };
            let policy = Policy::parse(&text, crate::indices::Present::of(ev.dataset()))
                .map_err(|e| plan(NAME, e))?;
            // The rule `pbg anonymize --pick` runs: the profile's, else the requirement rule.
            let rule =
                crate::release::suppression_rule(None, profile.rule_name, text.require.as_deref())
                    .map_err(|e| plan(NAME, e))?;
            ev = Arc::new(ev.with_rule(rule));
            pick(&ev, &policy).map_err(|e| plan(NAME, e))?.node
        } else {
            if exprs.len() > 2 {
                return plan_err!(
                    "{NAME}: requirements and an index go with 'pick' only, e.g. pbg_anonymize('{name}', 'pick', 'k>=10', 'glm')"
                );
            }
            ev.parse_node(&how).map_err(|e| plan(NAME, e))?
        };
        same_columns(&ev, &df).map_err(|e| plan(NAME, e))?;
        let view = release_plan(df, &ev, &node).map_err(|e| plan(NAME, e))?;
        Ok(super::planned_view::view_for(
            args.session(),
            ctx.state(),
            view,
        ))
    }
}
