//! The accumulator shared by the sensitive-value aggregates (`entropy_l`, `max_frequency`,
//! `recursive_cl`): per group, the histogram of the argument's values; the function differs only in
//! how a histogram is finished into a number.

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
    Accumulator, AggregateUDFImpl, Documentation, EmitTo, GroupsAccumulator, Signature,
    TypeSignature, Volatility,
};

/// Turns a group's value counts (any order) into the aggregate's value; `None` gives NULL.
pub(super) type Finish = fn(&[u64], f64) -> Option<f64>;

/// What distinguishes one histogram aggregate from another.
#[derive(Debug)]
pub(super) struct HistogramSpec {
    /// SQL name.
    pub name: &'static str,
    /// Number of arguments (the first is the value; others are constants read by `param`).
    pub arity: usize,
    /// Checks the argument types at planning.
    pub check: fn(&[DataType]) -> Result<()>,
    /// Reads the constant parameter from the arguments (0 when there is none).
    pub param: fn(&AccumulatorArgs) -> Result<f64>,
    /// Turns a group's counts into the value.
    pub finish: Finish,
    /// User documentation.
    pub doc: fn() -> &'static Documentation,
}

/// An aggregate over value histograms, returning Float64.
#[derive(Debug)]
pub(super) struct HistogramAggregate {
    spec: &'static HistogramSpec,
    signature: Signature,
}

impl HistogramAggregate {
    pub(super) fn new(spec: &'static HistogramSpec) -> Self {
        HistogramAggregate {
            spec,
            signature: Signature::one_of(
                vec![TypeSignature::Any(spec.arity)],
                Volatility::Immutable,
            ),
        }
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
        (self.spec.check)(args)?;
        Ok(DataType::Float64)
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let param = (self.spec.param)(&args)?;
        Ok(Box::new(HistogramAccumulator(HistogramGroups::new(
            self.spec.finish,
            param,
        ))))
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
        let param = (self.spec.param)(&args)?;
        Ok(Box::new(HistogramGroups::new(self.spec.finish, param)))
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
pub(super) fn any_types(_: &[DataType]) -> Result<()> {
    Ok(())
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
    finish: Finish,
    param: f64,
}

impl HistogramGroups {
    fn new(finish: Finish, param: f64) -> Self {
        HistogramGroups {
            codes: HashMap::new(),
            names: Vec::new(),
            groups: Vec::new(),
            finish,
            param,
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

    fn finish_groups(&self, groups: &[Vec<(u32, u64)>]) -> ArrayRef {
        let out: Float64Array = groups
            .iter()
            .map(|h| {
                let counts: Vec<u64> = h.iter().map(|(_, n)| *n).collect();
                if counts.is_empty() {
                    None
                } else {
                    (self.finish)(&counts, self.param)
                }
            })
            .collect();
        Arc::new(out)
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
        Ok(self.finish_groups(&groups))
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
        ScalarValue::try_from_array(&self.0.finish_groups(&self.0.groups), 0)
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
