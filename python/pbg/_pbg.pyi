"""Type stubs of the Rust extension ``pbg._pbg`` (used through the ``pbg`` package)."""

from typing import Any, Literal

__version__: str
#: The DataFusion version the extension is built on.
DATAFUSION_VERSION: str

class PbgError(Exception):
    """An error of pbg (bad input, profile, node or argument); the message is the CLI's."""

class Function:
    """One pbg SQL function, exportable to datafusion-python through datafusion-ffi."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> Literal["scalar", "aggregate", "table"]: ...
    def scalar_capsule(self) -> Any:
        """An ``FFI_ScalarUDF`` PyCapsule (scalar functions only)."""
    def aggregate_capsule(self) -> Any:
        """An ``FFI_AggregateUDF`` PyCapsule (aggregate functions only)."""
    def table_capsule(self, session: Any) -> Any:
        """An ``FFI_TableFunction`` PyCapsule bound to ``session``'s codec (table functions only)."""

def functions(ctx: Any) -> list[Function]:
    """Every pbg function over one fresh profile registry, reading tables of ``ctx`` by name."""

class ArrowStream:
    """Record batches handed over once through the Arrow PyCapsule interface."""

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any: ...

class Engine:
    """pbg's own session: Arrow tables, declared profiles, and the engine's jobs."""

    def __init__(self) -> None: ...
    def register_arrow(self, name: str, data: Any) -> None:
        """Registers Arrow data (``__arrow_c_stream__``) as table ``name``, without a copy."""
    def declare(
        self,
        name: str,
        toml: str,
        base: str,
        table: str | None = None,
        path: str | None = None,
        file: str | None = None,
    ) -> None:
        """Declares profile ``name`` from TOML text (relative paths against ``base``), reading
        table ``table`` or ``path`` instead of its own input when given; ``file`` is the profile's
        file (named in messages, never written over)."""
    def sql(self, query: str) -> ArrowStream:
        """Runs SQL in the session."""
    def evaluate(self, name: str, node: str) -> str:
        """The CLI's ``evaluate`` JSON of ``node``."""
    def anonymize(
        self,
        name: str,
        output: str,
        node: str | None = None,
        pick: str | None = None,
        require: str | None = None,
        minimize: str | None = None,
        maximize: str | None = None,
        objectives: str | None = None,
        significance: str | None = None,
        goal: str | None = None,
        weights: str | None = None,
        suppression_rule: str | None = None,
    ) -> str:
        """Writes and verifies a release; the CLI's JSON report."""
