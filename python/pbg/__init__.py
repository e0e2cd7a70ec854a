"""pbg: property based generalization inside DataFusion, from Python.

Two ways in:

* SQL in your own datafusion-python session: ``pbg.register(ctx)`` adds every pbg function
  (``pbg_profile``, ``pbg_evaluate``, ``pbg_lattice``, ``pbg_search``, ``pbg_anonymize``,
  ``generalize``, ``entropy_l``, ...) through datafusion-ffi.
* A Pythonic layer for what is not SQL: :class:`Profile`, :func:`evaluate`, :func:`lattice`,
  :func:`search` and :func:`anonymize`, over paths, pyarrow Tables and polars DataFrames (read
  through the Arrow C stream interface, without copying their buffers).

Every error is a :class:`PbgError` carrying the message the CLI prints.
"""

from __future__ import annotations

import json
import os
import warnings
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

from . import _pbg
from ._pbg import PbgError

__all__ = [
    "PbgError",
    "Profile",
    "anonymize",
    "evaluate",
    "lattice",
    "register",
    "search",
]

__version__: str = _pbg.__version__

#: The name a profile is declared under in the session behind the Pythonic layer.
_PROFILE = "profile"
#: The table Arrow input data is registered as there.
_INPUT = "input"


def _datafusion() -> Any:
    """The installed datafusion-python, checked to be of pbg's DataFusion major version."""
    try:
        import datafusion
    except ImportError as e:  # pragma: no cover - datafusion is a dependency
        raise PbgError("pbg.register needs datafusion-python: pip install 'datafusion==55.*'") from e
    ours = _pbg.DATAFUSION_VERSION.split(".")[0]
    theirs = str(getattr(datafusion, "__version__", "?")).split(".")[0]
    if theirs != ours:
        raise PbgError(
            f"pbg is built on DataFusion {_pbg.DATAFUSION_VERSION} but datafusion-python "
            f"{datafusion.__version__} is installed; install datafusion=={ours}.* "
            "(functions cannot cross between different DataFusion versions)"
        )
    return datafusion


class _ScalarExport:
    """A pbg scalar function as datafusion-python imports foreign ones."""

    def __init__(self, function: Any) -> None:
        self._function = function

    def __datafusion_scalar_udf__(self) -> Any:
        return self._function.scalar_capsule()


class _AggregateExport:
    """A pbg aggregate function as datafusion-python imports foreign ones."""

    def __init__(self, function: Any) -> None:
        self._function = function

    def __datafusion_aggregate_udf__(self) -> Any:
        return self._function.aggregate_capsule()


class _TableExport:
    """A pbg table function as datafusion-python imports foreign ones."""

    def __init__(self, function: Any, ctx: Any) -> None:
        self._function = function
        self._ctx = ctx

    def __datafusion_table_function__(self, session: Any = None) -> Any:
        return self._function.table_capsule(session if session is not None else self._ctx)


#: The functions registered in each session, so that registering twice keeps its profiles.
_registered: weakref.WeakKeyDictionary[Any, list[Any]] = weakref.WeakKeyDictionary()


def register(ctx: Any) -> list[str]:
    """Adds every pbg function to the datafusion-python ``SessionContext`` ``ctx``.

    The functions share one profile registry: declare a profile with
    ``SELECT * FROM pbg_profile('p', '<TOML>')`` and the others see it (registering again keeps
    it). A profile's input is a path (``input = "people/"``): pbg cannot read tables of ``ctx``
    across datafusion-ffi, but its scalar and aggregate functions run over any of them. Returns
    the names registered.

    Example::

        ctx = datafusion.SessionContext()
        pbg.register(ctx)
        ctx.register_parquet("people", "people/")
        ctx.sql("SELECT * FROM pbg_profile('p', $$...toml...$$)").collect()
        front = ctx.sql("SELECT * FROM pbg_search('p', 'k,l,glm', 'exhaustive')").to_pandas()
    """
    datafusion = _datafusion()
    if not isinstance(ctx, datafusion.SessionContext):
        raise PbgError(f"pbg.register needs a datafusion.SessionContext, not a {type(ctx).__name__}")
    # Registering again keeps the same functions (and so the profiles already declared).
    functions = _registered.get(ctx)
    if functions is None:
        functions = _pbg.functions(ctx)
        _registered[ctx] = functions
    names = []
    for f in functions:
        if f.kind == "scalar":
            ctx.register_udf(datafusion.ScalarUDF(f.name, _ScalarExport(f)))
        elif f.kind == "aggregate":
            ctx.register_udaf(datafusion.AggregateUDF(f.name, _AggregateExport(f)))
        else:
            ctx.register_udtf(datafusion.TableFunction(f.name, _TableExport(f, ctx), ctx))
        names.append(f.name)
    return names


# --- TOML text for keyword profiles ---------------------------------------------------------


def _toml(value: Any) -> str:
    """``value`` as a TOML value (strings, numbers, booleans, lists, inline tables)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (str, os.PathLike)):
        text = os.fspath(value)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise PbgError(
                f"profile: {text!r} is not Unicode text (a lone surrogate at {e.start}): names and "
                "values must be UTF-8"
            ) from None
        # JSON's escapes are TOML's basic-string escapes (non-ASCII left as written); TOML also
        # forbids DEL raw (a column named with it gave a TOML error about a profile never written).
        return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_toml(str(k))} = {_toml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, Iterable):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise PbgError(f"profile: cannot write a {type(value).__name__} into the profile")


def _is_arrow(value: Any) -> bool:
    return hasattr(value, "__arrow_c_stream__")


def _column_names(value: Any) -> list[str]:
    """The column names of Arrow data as Python holds them, nested fields of pyarrow and polars
    schemas included (pandas gives its top-level names). Data reached only through its Arrow
    stream (a bare ``__arrow_c_stream__``, a datafusion DataFrame) has no names to read here:
    the C interface itself already cuts them."""
    names: list[str] = []

    def walk(t: Any) -> None:
        for i in range(getattr(t, "num_fields", 0)):
            field = t.field(i)
            names.append(field.name)
            walk(field.type)

    def walk_polars(dtype: Any) -> None:
        for field in getattr(dtype, "fields", None) or []:
            names.append(field.name)
            walk_polars(field.dtype)
        inner = getattr(dtype, "inner", None)
        if inner is not None:
            walk_polars(inner)

    schema = getattr(value, "schema", None)
    if schema is not None and hasattr(schema, "names") and hasattr(schema, "field"):
        for field in schema:
            names.append(field.name)
            walk(field.type)
        return names
    if type(value).__module__.startswith("polars") and isinstance(schema, Mapping):
        # polars' own export panics on a NUL in a nested name, aborting the interpreter.
        for name, dtype in schema.items():
            names.append(name)
            walk_polars(dtype)
        return names
    columns = getattr(value, "columns", None)
    if columns is None:
        columns = getattr(value, "column_names", [])
    return [str(c) for c in columns]


def _no_nul_names(value: Any, what: str) -> None:
    """Refuses Arrow data with a NUL in a column name: the Arrow C interface passes names as C
    strings, so the engine would read ``"a\\x00b"`` as ``"a"`` and release it renamed."""
    for name in _column_names(value):
        if "\x00" in name:
            raise PbgError(
                f"profile: {what}: column {name!r} holds a NUL character, which Arrow's C "
                "interface cuts the name at: rename the column"
            )


def _no_pandas_index(value: Any, what: str) -> None:
    """Refuses a pandas DataFrame whose index its Arrow stream would carry as a column: a named
    index (`set_index("name")`), or the row numbers of a filtered frame (`__index_level_0__`),
    was released raw beside the declared columns."""
    if not type(value).__module__.startswith("pandas"):
        return
    index = getattr(value, "index", None)
    if index is None or type(index).__name__ == "RangeIndex":
        return
    names = [n for n in getattr(index, "names", []) if n is not None]
    named = f" ({', '.join(map(str, names))})" if names else ""
    # An input's index would be released raw; a hierarchy's would be read as one of its levels.
    effect = "released as it is" if what == "input" else "taken for one of its levels"
    raise PbgError(
        f"profile: {what}: the pandas DataFrame's index{named} would be read as a column and "
        f"{effect}: reset_index() to make it a column, or reset_index(drop=True) to drop it"
    )


class Profile:
    """A pbg profile: the input, the quasi-identifiers with their hierarchies, the sensitive
    attribute and the rest of what the CLI reads from a TOML profile.

    Build one from TOML (:meth:`from_toml`, :meth:`from_file`) or from keyword arguments::

        Profile(
            input=people,                      # a path, a pyarrow Table or a polars DataFrame
            qis={
                "age": "hierarchies/age.csv",   # an ARX hierarchy file
                "sex": {"Male": ["*"], "Female": ["*"]},   # leaf -> its labels, level 1 up
                "zip": zip_levels,              # a table: leaf column, then one per level
                "income": {"type": "interval", "widths": [10000, 50000]},
            },
            sensitive="occupation",
            suppression_limit="1%",
        )
    """

    def __init__(
        self,
        input: Any = None,
        qis: Mapping[str, Any] | None = None,
        sensitive: str | None = None,
        *,
        class_attribute: str | None = None,
        identifiers: Iterable[str] = (),
        suppression_limit: int | str | None = None,
        sensitive_hierarchy: Any = None,
        delimiter: str | None = None,
        null_as: Mapping[str, str] | None = None,
    ) -> None:
        if input is None:
            raise PbgError("profile: no input: give a path, a pyarrow Table or a polars DataFrame")
        if not qis or not isinstance(qis, Mapping):
            raise PbgError("profile: no quasi-identifiers: give qis={'column': hierarchy, ...}")
        if not sensitive:
            raise PbgError("profile: no sensitive attribute: give sensitive='column'")
        self._tables: dict[str, Any] = {}
        lines = []
        lines.append(self._input_line(input))
        if delimiter is not None:
            lines.append(f"delimiter = {_toml(delimiter)}")
        lines.append(f"sensitive = {_toml(sensitive)}")
        if class_attribute is not None:
            lines.append(f"class = {_toml(class_attribute)}")
        identifiers = list(identifiers)
        if identifiers:
            lines.append(f"identifiers = {_toml(identifiers)}")
        if suppression_limit is not None:
            lines.append(f"suppression_limit = {_toml(str(suppression_limit))}")
        if sensitive_hierarchy is not None:
            spec = self._hierarchy("sensitive", sensitive_hierarchy)
            lines.append(f"sensitive_hierarchy = {spec}")
        for name, hierarchy in qis.items():
            lines.append("")
            lines.append("[[qi]]")
            lines.append(f"name = {_toml(name)}")
            lines.append(f"hierarchy = {self._hierarchy(name, hierarchy)}")
            if null_as and name in null_as:
                lines.append(f"null_as = {_toml(null_as[name])}")
        self.toml = "\n".join(lines) + "\n"
        self.base_dir = os.getcwd()
        self._input_table = None
        self._input_path = None

    def _input_line(self, input: Any) -> str:
        if isinstance(input, (str, os.PathLike)):
            return f"input = {_toml(os.path.abspath(os.fspath(input)))}"
        if _is_arrow(input):
            _no_pandas_index(input, "input")
            _no_nul_names(input, "input")
            self._tables[_INPUT] = input
            return f"table = {_toml(_INPUT)}"
        raise PbgError(
            f"profile: input: a {type(input).__name__} is not Arrow data: give a path, a pyarrow "
            "Table, a polars DataFrame or another object with __arrow_c_stream__"
        )

    def _hierarchy(self, column: str, hierarchy: Any) -> str:
        if isinstance(hierarchy, (str, os.PathLike)):
            return _toml(os.path.abspath(os.fspath(hierarchy)))
        if _is_arrow(hierarchy):
            _no_pandas_index(hierarchy, f"hierarchy of `{column}`")
            _no_nul_names(hierarchy, f"hierarchy of `{column}`")
            table = f"__pbg_hierarchy_{len(self._tables)}"
            self._tables[table] = hierarchy
            return _toml({"type": "sql", "table": table})
        if isinstance(hierarchy, Mapping):
            if "type" in hierarchy:
                return _toml(hierarchy)
            rows = []
            for leaf, levels in hierarchy.items():
                if isinstance(levels, (str, bytes)) or not isinstance(levels, Iterable):
                    levels = [levels]
                rows.append([str(leaf), *(str(v) for v in levels)])
            return _toml({"type": "table", "rows": rows})
        raise PbgError(
            f"profile: hierarchy of `{column}`: a {type(hierarchy).__name__} is not a hierarchy: "
            "give an ARX CSV path, a dict leaf -> levels, a table (leaf, level1, ...) or a dict "
            "with 'type'"
        )

    @classmethod
    def from_toml(cls, text: str, base_dir: str | os.PathLike = ".", input: Any = None) -> Profile:
        """A profile from TOML text (the CLI's format); relative paths in it are relative to
        ``base_dir``. ``input`` (Arrow data or a path) replaces the profile's ``input``/``table``."""
        self = cls.__new__(cls)
        self._tables = {}
        self.base_dir = os.path.abspath(os.fspath(base_dir))
        self._input_table = None
        self._input_path = None
        if input is not None:
            import tomllib

            try:
                parsed = tomllib.loads(text)
            except tomllib.TOMLDecodeError as e:
                raise PbgError(f"profile: {e}") from e
            line = self._input_line(input)
            if "input" in parsed or "table" in parsed:
                # The profile's own input is replaced by the data given.
                if _is_arrow(input):
                    self._input_table = _INPUT
                else:
                    self._input_path = os.path.abspath(os.fspath(input))
            else:
                text = line + "\n" + text
        self.toml = text
        return self

    @classmethod
    def from_file(cls, path: str | os.PathLike, input: Any = None) -> Profile:
        """A profile from a TOML file; relative paths in it are relative to the file's directory."""
        path = os.fspath(path)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise PbgError(f"{path}: {e.strerror}") from e
        except UnicodeDecodeError as e:
            raise PbgError(f"{path}: not UTF-8 text (byte {e.start}): a profile is TOML") from e
        profile = cls.from_toml(text, os.path.dirname(os.path.abspath(path)), input)
        profile._file = os.path.abspath(path)
        return profile

    def _engine(self) -> Any:
        """A fresh pbg session with this profile declared and its Arrow tables registered."""
        engine = _pbg.Engine()
        for name, data in self._tables.items():
            engine.register_arrow(name, data)
        file = getattr(self, "_file", None)
        engine.declare(_PROFILE, self.toml, self.base_dir, self._input_table, self._input_path, file)
        return engine

    def __repr__(self) -> str:
        return f"Profile(<{len(self.toml.splitlines())} lines of TOML>)"


def _profile(profile: Profile | str | os.PathLike) -> Profile:
    if isinstance(profile, Profile):
        return profile
    if isinstance(profile, (str, os.PathLike)):
        return Profile.from_file(profile)
    raise PbgError(f"a {type(profile).__name__} is not a profile: give a pbg.Profile or a TOML path")


def _node(node: str | Iterable[int]) -> str:
    if isinstance(node, str):
        return node
    if isinstance(node, Iterable) and not isinstance(node, Mapping):
        levels = list(node)
        if all(isinstance(v, int) and not isinstance(v, bool) for v in levels):
            return ",".join(str(v) for v in levels)
    raise PbgError(
        f"node: give one integer level per QI, as a list ([1, 0, 2]) or text ('1,0,2'), not {node!r}"
    )


def _quote(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def evaluate(profile: Profile | str | os.PathLike, node: str | Iterable[int]) -> dict[str, Any]:
    """Every index of ``node`` (one level per QI, e.g. ``"1,0,2"`` or ``[1, 0, 2]``), as the CLI's
    ``pbg evaluate`` prints them."""
    engine = _profile(profile)._engine()
    return json.loads(engine.evaluate(_PROFILE, _node(node)))


def lattice(profile: Profile | str | os.PathLike) -> Any:
    """Every node of the profile's lattice with every index, as a ``pyarrow.Table``."""
    import pyarrow

    engine = _profile(profile)._engine()
    return pyarrow.table(engine.sql(f"SELECT * FROM pbg_lattice({_quote(_PROFILE)})"))


def search(
    profile: Profile | str | os.PathLike,
    indices: str | Iterable[str] = "k,glm",
    algorithm: str = "exhaustive",
    seed: int | None = None,
) -> Any:
    """The minimal PBGs (the Pareto front) of the quality indices ``indices`` (e.g.
    ``"k,l,glm"``), by ``"exhaustive"`` search or the evolutionary ``"ea"`` (with ``seed``), as a
    ``pyarrow.Table``."""
    import pyarrow

    if not isinstance(indices, str):
        indices = ",".join(indices)
    args = [_quote(_PROFILE), _quote(indices), _quote(algorithm)]
    if seed is not None:
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**63:
            raise PbgError(f"search: the seed must be an integer from 0 to 2^63 - 1, not {seed!r}")
        args.append(str(seed))
    engine = _profile(profile)._engine()
    return pyarrow.table(engine.sql(f"SELECT * FROM pbg_search({', '.join(args)})"))


def anonymize(
    profile: Profile | str | os.PathLike,
    output: str | os.PathLike,
    *,
    node: str | Iterable[int] | None = None,
    pick: str | None = None,
    require: str | None = None,
    minimize: str | None = None,
    maximize: str | None = None,
    objectives: str | None = None,
    significance: str | None = None,
    goal: str | None = None,
    weights: str | None = None,
    suppression_rule: str | None = None,
) -> dict[str, Any]:
    """Releases the profile's input at ``node`` or at the node a policy picks (``pick="measure"``
    with ``require="k>=10,l>=3"`` and ``minimize="glm"``, as the CLI's flags) to ``output`` (a
    ``.csv`` or ``.parquet`` file, written atomically and verified before it is renamed). Returns
    the CLI's JSON report as a dict; its ``notes`` (a column released raw whose name looks like a
    QI's, a type other Parquet readers read differently) are also issued as warnings."""
    engine = _profile(profile)._engine()
    report = engine.anonymize(
        _PROFILE,
        os.fspath(output),
        node=None if node is None else _node(node),
        pick=pick,
        require=require,
        minimize=minimize,
        maximize=maximize,
        objectives=objectives,
        significance=significance,
        goal=goal,
        weights=weights,
        suppression_rule=suppression_rule,
    )
    report = json.loads(report)
    for note in report.get("notes", []):
        warnings.warn(f"pbg: {note}", UserWarning, stacklevel=2)
    return report
