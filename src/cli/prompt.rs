//! The `pbg sql` prompt's commands besides SQL, as in datafusion-cli: `\?` help, `\q` (or `quit`,
//! `exit`), `\d` (tables), `\d NAME` (columns), `\f` (pbg's functions with one line each).

use datafusion::prelude::SessionContext;

/// What a line of the prompt asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Meta {
    /// Leave the prompt.
    Quit,
    /// Print this text.
    Print(String),
    /// Run this SQL instead (its result is printed as any query's).
    Sql(String),
}

const HELP: &str = "\\?          this help
\\q          quit (also `quit`, `exit`)
\\d          the tables of the session
\\d NAME     the columns of table NAME
\\f          pbg's functions, one line each
SQL;        any statement ending with `;` (SHOW TABLES, SHOW FUNCTIONS, SELECT ... FROM pbg_lattice(..))";

/// The meta command on `line`, if it is one (a line starting with `\`, or `quit` / `exit`).
pub fn meta(ctx: &SessionContext, line: &str) -> Option<Result<Meta, String>> {
    let line = line.trim().trim_end_matches(';').trim();
    if matches!(line, "quit" | "exit" | "\\q") {
        return Some(Ok(Meta::Quit));
    }
    let rest = line.strip_prefix('\\')?;
    let (command, argument) = match rest.split_once(char::is_whitespace) {
        Some((c, a)) => (c, a.trim()),
        None => (rest, ""),
    };
    Some(match (command, argument) {
        ("?" | "h", _) => Ok(Meta::Print(HELP.to_string())),
        ("d", "") => Ok(Meta::Sql(
            "SELECT table_catalog, table_schema, table_name, table_type \
             FROM information_schema.tables WHERE table_schema <> 'information_schema' \
             ORDER BY table_name"
                .to_string(),
        )),
        ("d", name) if !ctx.table_exist(name).unwrap_or(false) => {
            Err(format!("no table `{name}` in the session (\\d lists them)"))
        }
        ("d", name) => Ok(Meta::Sql(format!(
            "SELECT column_name, data_type, is_nullable FROM information_schema.columns \
             WHERE table_name = '{}' ORDER BY ordinal_position",
            name.replace('\'', "''")
        ))),
        ("f", _) => {
            let rows = pbg::sql::functions(ctx);
            let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
            let text = rows
                .iter()
                .map(|(name, kind, doc)| format!("{name:<width$}  {kind:<9}  {doc}"))
                .collect::<Vec<_>>()
                .join("\n");
            Ok(Meta::Print(text))
        }
        _ => Err(format!("unknown command `\\{command}` (\\? lists them)")),
    })
}
