//! The accumulator shared by the sensitive-value aggregates (`entropy_l`, `max_frequency`,
//! `recursive_cl`, and the distances `emd_equal`, `emd_ordered`, `emd_hierarchical`,
//! `beta_likeness`, `delta_disclosure`): per group, the histogram of the argument's values; the
//! function differs only in how a histogram is finished into a number.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Float64Array, ListBuilder, StringBuilder, UInt64Builder,
};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, FieldRef, UInt32Type, UInt64Type};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{
    Accumulator, AggregateUDFImpl, Documentation, EmitTo, GroupsAccumulator, Signature, Volatility,
};

/// Turns a group's histogram into the aggregate's value.
#[derive(Debug, Clone, Copy)]
pub(super) enum Finish {
    /// From the value counts alone (any order) and the constant parameter; `None` gives NULL.
    Counts(fn(&[u64], f64) -> Option<f64>),
    /// One distance of the group's distribution from a profile's input distribution (the second
    /// argument names the profile).
    Distance(fn(&crate::distribution::Distances) -> f64),
}

/// The profile a distance aggregate measures against, read when the first group is finished.
pub(super) struct ProfileDistribution {
    name: String,
    registry: Arc<crate::sql::Registry>,
    session: crate::sql::SessionSource,
    loaded: std::sync::OnceLock<std::result::Result<Loaded, String>>,
}

/// A profile's evaluator (its sensitive distribution and value codes).
struct Loaded {
    evaluator: Arc<crate::Evaluator>,
}

impl std::fmt::Debug for ProfileDistribution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ProfileDistribution({})", self.name)
    }
}

impl ProfileDistribution {
    fn load(&self, function: &str) -> Result<&Loaded> {
        let loaded = self.loaded.get_or_init(|| {
            let state = (self.session)().ok_or_else(|| {
                format!(
                    "{function}: needs the profile's whole sensitive distribution from the session that declared the profile, which this process does not have (on a cluster's executors: use pbg_evaluate(profile, node) for t-closeness, beta and delta there)"
                )
            })?;
            let evaluator = self
                .registry
                .statistics(function, &self.name, &state)
                .map_err(|e| e.to_string())?;
            Ok(Loaded { evaluator })
        });
        loaded
            .as_ref()
            .map_err(|e| datafusion::error::DataFusionError::Execution(e.clone()))
    }
}

/// What distinguishes one histogram aggregate from another.
#[derive(Debug)]
pub(super) struct HistogramSpec {
    /// SQL name.
    pub name: &'static str,
    /// Number of arguments (the first is the value; others are constants read by `param`).
    pub arity: usize,
    /// Checks the argument types at planning.
    pub check: fn(&str, &[DataType]) -> Result<()>,
    /// Reads the constant parameter from the arguments (0 when there is none; distances read the
    /// profile name instead).
    pub param: fn(&AccumulatorArgs) -> Result<f64>,
    /// Turns a group's counts into the value.
    pub finish: Finish,
    /// User documentation.
    pub doc: fn() -> &'static Documentation,
}

/// Where distance aggregates find profiles: the registry, and the session they are called in.
#[derive(Clone)]
pub(super) struct Profiles {
    pub registry: Arc<crate::sql::Registry>,
    pub session: crate::sql::SessionSource,
}

impl std::fmt::Debug for Profiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Profiles")
    }
}

/// An aggregate over value histograms, returning Float64.
#[derive(Debug)]
pub(super) struct HistogramAggregate {
    spec: &'static HistogramSpec,
    signature: Signature,
    profiles: Option<Profiles>,
}

impl HistogramAggregate {
    pub(super) fn new(spec: &'static HistogramSpec) -> Self {
        HistogramAggregate {
            spec,
            // One signature, not `one_of` one: a wrong argument count is then a plain planning
            // error naming the count, not DataFusion's "internal error" of no matching signature.
            signature: Signature::any(spec.arity, Volatility::Immutable),
            profiles: None,
        }
    }

    /// A distance aggregate, whose second argument names a profile of `profiles`.
    pub(super) fn with_profiles(spec: &'static HistogramSpec, profiles: Profiles) -> Self {
        HistogramAggregate {
            profiles: Some(profiles),
            ..Self::new(spec)
        }
    }

    fn groups(&self, args: &AccumulatorArgs) -> Result<HistogramGroups> {
        if args.is_distinct {
            // A histogram of distinct values would weigh every value once: not what these measure.
            return datafusion::common::plan_err!(
                "{}: DISTINCT is not supported (the measure needs every row's value)",
                self.spec.name
            );
        }
        let param = (self.spec.param)(args)?;
        let profile = match (&self.spec.finish, &self.profiles) {
            (Finish::Distance(_), Some(p)) => Some(Arc::new(ProfileDistribution {
                name: profile_name(self.spec.name, args)?,
                registry: p.registry.clone(),
                session: p.session.clone(),
                loaded: std::sync::OnceLock::new(),
            })),
            _ => None,
        };
        Ok(HistogramGroups::new(self.spec, param, profile))
    }
}

/// The profile named by a distance aggregate's second argument (a string constant).
fn profile_name(function: &str, args: &AccumulatorArgs) -> Result<String> {
    use datafusion::physical_expr::expressions::Literal;
    let value = match args.exprs.get(1) {
        Some(e) => match e.downcast_ref::<Literal>() {
            Some(l) => Some(l.value().clone()),
            // An expression from across datafusion-ffi: a constant evaluates without columns.
            None => {
                let options = arrow::array::RecordBatchOptions::new().with_row_count(Some(1));
                let batch = arrow::array::RecordBatch::try_new_with_options(
                    Arc::new(arrow::datatypes::Schema::empty()),
                    vec![],
                    &options,
                )?;
                match e.evaluate(&batch) {
                    Ok(v) => super::table::constant(&v)?,
                    Err(_) => None,
                }
            }
        },
        None => None,
    };
    match value.as_ref() {
        Some(
            ScalarValue::Utf8(Some(s))
            | ScalarValue::LargeUtf8(Some(s))
            | ScalarValue::Utf8View(Some(s)),
        ) => Ok(s.clone()),
        _ => datafusion::common::plan_err!(
            "{function}: the second argument must be a profile name (a string constant), e.g. {function}(occupation, 'adult')"
        ),
    }
}

impl PartialEq for HistogramAggregate {
    fn eq(&self, other: &Self) -> bool {
        self.spec.name == other.spec.name
    }
}

impl Eq for HistogramAggregate {}

impl std::hash::Hash for HistogramAggregate {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.spec.name.hash(state);
    }
}

impl AggregateUDFImpl for HistogramAggregate {
    fn name(&self) -> &str {
        self.spec.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        (self.spec.check)(self.spec.name, args)?;
        Ok(DataType::Float64)
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(HistogramAccumulator(self.groups(&args)?)))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        state_fields(args)
    }

    fn groups_accumulator_supported(&self, _: AccumulatorArgs) -> bool {
        true
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(self.groups(&args)?))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some((self.spec.doc)())
    }
}

/// No parameter.
pub(super) fn no_param(_: &AccumulatorArgs) -> Result<f64> {
    Ok(0.0)
}

/// Any argument types.
pub(super) fn any_types(_: &str, _: &[DataType]) -> Result<()> {
    Ok(())
}

/// A distance aggregate's arguments: any sensitive type, then a profile name.
pub(super) fn profile_arg(name: &str, args: &[DataType]) -> Result<()> {
    if !matches!(
        args[1],
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    ) {
        return datafusion::common::plan_err!(
            "{name}: the second argument must be a profile name, got {}",
            args[1]
        );
    }
    Ok(())
}

/// The documentation of a distance aggregate: what it measures, a worked value and an example.
pub(super) fn distance_doc(name: &str, what: &str, worked: &str, example: &str) -> Documentation {
    Documentation::builder(
        super::table::doc_section(),
        format!(
            "{what} NULLs are ignored; an empty group gives NULL. The profile's input is read once \
             per query (its distribution); a value absent from it is an error. Worked example: \
             {worked}."
        ),
        format!("{name}(sensitive, 'profile')"),
    )
    .with_sql_example(example)
    .with_argument(
        "sensitive",
        "The sensitive attribute (any type, compared by text form with the profile's values).",
    )
    .with_argument(
        "profile",
        "A declared profile (pbg_profile), as a string constant.",
    )
    .build()
}

/// The intermediate state: the distinct values and their counts, as two lists.
fn state_fields(args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
    Ok(vec![
        Arc::new(Field::new_list(
            format_state_name(args.name, "values"),
            Field::new_list_field(DataType::Utf8, true),
            true,
        )),
        Arc::new(Field::new_list(
            format_state_name(args.name, "counts"),
            Field::new_list_field(DataType::UInt64, true),
            true,
        )),
    ])
}

/// Histograms of values per group; values are interned to small codes.
#[derive(Debug)]
struct HistogramGroups {
    codes: HashMap<String, u32>,
    names: Vec<String>,
    groups: Vec<Vec<(u32, u64)>>,
    spec: &'static HistogramSpec,
    param: f64,
    profile: Option<Arc<ProfileDistribution>>,
}

impl HistogramGroups {
    fn new(
        spec: &'static HistogramSpec,
        param: f64,
        profile: Option<Arc<ProfileDistribution>>,
    ) -> Self {
        HistogramGroups {
            codes: HashMap::new(),
            names: Vec::new(),
            groups: Vec::new(),
            spec,
            param,
            profile,
        }
    }

    fn code(&mut self, v: &str) -> u32 {
        if let Some(&c) = self.codes.get(v) {
            return c;
        }
        let c = self.names.len() as u32;
        self.codes.insert(v.to_string(), c);
        self.names.push(v.to_string());
        c
    }

    fn add(&mut self, group: usize, code: u32, n: u64) {
        let h = &mut self.groups[group];
        match h.iter_mut().find(|(c, _)| *c == code) {
            Some((_, count)) => *count += n,
            None => h.push((code, n)),
        }
    }

    /// Code per row (None for nulls): the values are dictionary-encoded, each distinct one interned once.
    fn row_codes(&mut self, values: &ArrayRef) -> Result<Vec<Option<u32>>> {
        let dict = cast(
            values,
            &DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8)),
        )?;
        let dict = dict.as_dictionary::<UInt32Type>();
        let distinct = cast(dict.values(), &DataType::Utf8)?;
        let map: Vec<u32> = distinct
            .as_string::<i32>()
            .iter()
            .map(|v| self.code(v.unwrap_or("")))
            .collect();
        Ok(dict
            .keys()
            .iter()
            .map(|k| k.map(|k| map[k as usize]))
            .collect())
    }

    fn finish_groups(&self, groups: &[Vec<(u32, u64)>]) -> Result<ArrayRef> {
        let out: Float64Array = match self.spec.finish {
            Finish::Counts(finish) => groups
                .iter()
                .map(|h| {
                    let counts: Vec<u64> = h.iter().map(|(_, n)| *n).collect();
                    if counts.is_empty() {
                        None
                    } else {
                        finish(&counts, self.param)
                    }
                })
                .collect(),
            Finish::Distance(pick) => {
                let name = self.spec.name;
                let Some(profile) = &self.profile else {
                    return datafusion::common::internal_err!("{name}: no profile registry");
                };
                let loaded = profile.load(name)?;
                let model = loaded.evaluator.sensitive_model();
                let sensitive = &loaded.evaluator.dataset().sensitive;
                let mut out = Vec::with_capacity(groups.len());
                // The smallest value missing from the profile is named, whatever the group order.
                let mut missing: Option<&str> = None;
                for h in groups {
                    if h.is_empty() {
                        out.push(None);
                        continue;
                    }
                    let mut cells = Vec::with_capacity(h.len());
                    for (c, n) in h {
                        let value = self.names[*c as usize].as_str();
                        match sensitive.code_of(value) {
                            Some(code) => cells.push((code, *n)),
                            None => missing = missing.min(Some(value)).or(Some(value)),
                        }
                    }
                    let size = cells.iter().map(|c| c.1).sum();
                    out.push(
                        Some(pick(&model.class(cells.into_iter(), size))).filter(|v| !v.is_nan()),
                    );
                }
                if let Some(value) = missing {
                    return datafusion::common::exec_err!(
                        "{name}: value `{value}` does not occur in the sensitive attribute of profile '{}': a distance is measured against that input's distribution",
                        profile.name
                    );
                }
                out.into_iter().collect()
            }
        };
        Ok(Arc::new(out))
    }

    fn state_of(&self, groups: &[Vec<(u32, u64)>]) -> Vec<ArrayRef> {
        let mut values = ListBuilder::new(StringBuilder::new());
        let mut counts = ListBuilder::new(UInt64Builder::new());
        for h in groups {
            for (c, n) in h {
                values.values().append_value(&self.names[*c as usize]);
                counts.values().append_value(*n);
            }
            values.append(true);
            counts.append(true);
        }
        vec![Arc::new(values.finish()), Arc::new(counts.finish())]
    }
}

impl GroupsAccumulator for HistogramGroups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.groups.resize_with(total_num_groups, Vec::new);
        let codes = self.row_codes(&values[0])?;
        for (i, (&g, code)) in group_indices.iter().zip(codes).enumerate() {
            let keep = opt_filter.is_none_or(|f| f.is_valid(i) && f.value(i));
            if let (true, Some(c)) = (keep, code) {
                self.add(g, c, 1);
            }
        }
        Ok(())
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let groups = emit_to.take_needed(&mut self.groups);
        self.finish_groups(&groups)
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let groups = emit_to.take_needed(&mut self.groups);
        Ok(self.state_of(&groups))
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.groups.resize_with(total_num_groups, Vec::new);
        let names = values[0].as_list::<i32>();
        let counts = values[1].as_list::<i32>();
        for (i, &g) in group_indices.iter().enumerate() {
            if names.is_null(i) {
                continue;
            }
            let n = names.value(i);
            let c = counts.value(i);
            let (n, c) = (n.as_string::<i32>(), c.as_primitive::<UInt64Type>());
            for j in 0..n.len() {
                let code = self.code(n.value(j));
                self.add(g, code, c.value(j));
            }
        }
        Ok(())
    }

    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        let text = cast(&values[0], &DataType::Utf8)?;
        let text = text.as_string::<i32>();
        let mut names = ListBuilder::new(StringBuilder::new());
        let mut counts = ListBuilder::new(UInt64Builder::new());
        for i in 0..text.len() {
            let keep = opt_filter.is_none_or(|f| f.is_valid(i) && f.value(i));
            if keep && text.is_valid(i) {
                names.values().append_value(text.value(i));
                counts.values().append_value(1);
            }
            names.append(true);
            counts.append(true);
        }
        Ok(vec![Arc::new(names.finish()), Arc::new(counts.finish())])
    }

    fn size(&self) -> usize {
        self.groups
            .iter()
            .map(|h| h.capacity() * 16 + 24)
            .sum::<usize>()
            + self.names.iter().map(|n| n.len() + 48).sum::<usize>()
    }
}

/// The same histogram as a plain (single group) accumulator.
#[derive(Debug)]
struct HistogramAccumulator(HistogramGroups);

impl Accumulator for HistogramAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let n = values[0].len();
        self.0.update_batch(values, &vec![0; n], None, 1)
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        self.0.groups.resize_with(1, Vec::new);
        ScalarValue::try_from_array(&self.0.finish_groups(&self.0.groups)?, 0)
    }

    fn size(&self) -> usize {
        self.0.size()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.0.groups.resize_with(1, Vec::new);
        self.0
            .state_of(&self.0.groups)
            .iter()
            .map(|a| ScalarValue::try_from_array(a, 0))
            .collect()
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let n = states[0].len();
        self.0.merge_batch(states, &vec![0; n], 1)
    }
}
