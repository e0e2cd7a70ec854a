//! The optimal pick without enumerating the lattice: the node of least GLM among those meeting
//! monotone requirements (`k>=5`; `l>=3` too when nothing can be suppressed).
//!
//! Two facts make pruning exact. The requirements are monotone (SPEC §7): a node that meets them
//! has every coarser node meet them, and one that misses them has every finer node miss them. And
//! the GLM of a node's generalization with nothing suppressed ([`Evaluator::glm_bound`]) is a lower
//! bound of its GLM that never decreases upwards, known without evaluating anything.
//!
//! Nodes are visited best-first by that bound from the bottom. A visited node's status comes from
//! tags when a known failing node above it or a known meeting node below it implies it; otherwise
//! a *probe* decides it: a chain from the node to the top (raising the QI that adds the least
//! bound at each step) is binary-searched for its lowest node meeting the requirements, and the
//! two nodes around that cut are tagged (everything below the failing one fails, everything above
//! the meeting one meets), as Flash does. A meeting node is evaluated and becomes the incumbent
//! when its GLM is lower; its successors are queued only when it suppresses rows (a coarser node
//! may then lose less). A failing node is left by *escapes*: a node above it that may meet must
//! exceed its failing tag in some QI, so the queue gets, per QI, the node raised to one level above
//! the tag — a jump over the whole failing region under the tag, not a visit to each node in it.
//! The search ends when the next bound exceeds the incumbent's GLM: no unvisited node can do
//! better, so the incumbent is optimal (ties to fewer levels, then lexicographic order, as the
//! exhaustive pick).
//!
//! From [`IMPLY_MIN_ROWS`] encoded rows most failing nodes are not evaluated whole: a look at one
//! hash part of their classes ([`Evaluator::tables_unless_decided`]) shows more than η tuples
//! alone in their class, or in classes smaller than the k required, and either fails the node.
//!
//! On wide tables the nodes whose bound is below the optimum can need thousands of probes, so a
//! [`Budget`] of evaluations (by default scaled to the table's rows) stops the search; the
//! incumbent is then improved by a greedy descent and returned unproven, with the least bound of
//! the nodes left to visit: a lower bound of the optimum, so the gap is known. Under a suppression
//! limit, the pick without suppression (within the same budget again) is a candidate for that
//! incumbent: the search may spend its budget on nodes that meet only by suppressing.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};

use crate::error::Result;
use crate::evaluate::Evaluator;
use crate::indices::Index;
use crate::lattice::Node;
use crate::policy::{Requirement, finer};
use crate::search::cache::EvaluationCache;

/// Nodes the best-first order may visit before the pick stops unproven.
pub const MAX_VISITED: usize = 100_000;

/// Evaluations a pruned pick may make before it stops unproven, whatever the table's size.
pub const MAX_EVALUATIONS: usize = 20_000;

/// Evaluations a pruned pick may make on any table by default.
pub const MIN_EVALUATIONS: usize = 64;

/// Encoded rows times evaluations a pruned pick may spend by default: a direct evaluation costs
/// about its rows, so this is 200 evaluations of a 1 M-row table (about 2.5 s on 2 cores) and
/// thousands on adult, whose optimum takes under a hundred.
pub const EVALUATED_ROWS: usize = 200_000_000;

/// Encoded rows from which the pick implies nodes from singleton tuples instead of evaluating
/// them (on adult's 30,162 rows the singleton counts cost more than the evaluations they save).
pub const IMPLY_MIN_ROWS: usize = 1 << 17;

/// The share of the evaluation budget the best-first search leaves to the greedy descent that
/// follows a stop (1/4, at least one evaluation when the budget has three).
pub const DESCENT_SHARE: usize = 4;

/// The least budget of evaluations: the bottom (every roll-up's source) and the top (which
/// tells whether any node meets the requirements).
pub const MIN_BUDGET: usize = 2;

/// Bytes the queue of nodes to visit (and the set of nodes queued) may hold before the pick
/// stops unproven: each queued node costs its levels plus bookkeeping, and a visit queues up to
/// one successor per QI.
pub const MAX_QUEUE_BYTES: usize = 256 << 20;

/// How far a pruned pick may go before it stops unproven.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Nodes visited in bound order.
    pub visited: usize,
    /// Nodes evaluated.
    pub evaluations: usize,
}

impl Budget {
    /// The default budget for a table of `rows` encoded rows: [`EVALUATED_ROWS`] spread over
    /// evaluations, within [`MIN_EVALUATIONS`] and [`MAX_EVALUATIONS`].
    pub fn for_rows(rows: usize) -> Self {
        Budget {
            visited: MAX_VISITED,
            evaluations: (EVALUATED_ROWS / rows.max(1)).clamp(MIN_EVALUATIONS, MAX_EVALUATIONS),
        }
    }

    /// A budget of `evaluations` (the user's `--pick-evaluations`).
    pub fn evaluations(evaluations: usize) -> Self {
        Budget {
            visited: MAX_VISITED.max(evaluations),
            evaluations,
        }
    }

    /// The evaluations the whole pick may make: [`Self::evaluations`], at least [`MIN_BUDGET`].
    pub fn total(self) -> usize {
        self.evaluations.max(MIN_BUDGET)
    }

    /// The evaluations the best-first search may make: all but [`DESCENT_SHARE`] of the budget,
    /// leaving the descent at least one (the candidate without suppression is evaluated in it)
    /// when the budget has more than the bottom and the top.
    pub fn search_evaluations(self) -> usize {
        let total = self.total();
        let descent = if total > MIN_BUDGET {
            (total / DESCENT_SHARE).max(1)
        } else {
            0
        };
        total - descent
    }
}

/// A limit of [`Budget`] (or of memory) that stops a pruned pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// [`Budget::evaluations`].
    Evaluations,
    /// [`Budget::visited`].
    Visited,
    /// [`MAX_QUEUE_BYTES`].
    QueueBytes,
}

impl Limit {
    /// The limit in words, with its value under `budget`.
    pub fn describe(self, budget: Budget) -> String {
        match self {
            // The search stops at its share; the rest is the greedy descent's.
            Limit::Evaluations if budget.total() == MIN_BUDGET => {
                format!("{MIN_BUDGET} evaluations (the bottom and the top, no greedy descent)")
            }
            Limit::Evaluations => format!(
                "{} evaluations, {} of them for the search and the rest for a greedy descent",
                budget.total(),
                budget.search_evaluations()
            ),
            Limit::Visited => format!("{} nodes visited", budget.visited),
            Limit::QueueBytes => format!("{} MiB of queued nodes", MAX_QUEUE_BYTES >> 20),
        }
    }
}

/// The outcome of a pruned pick.
#[derive(Debug, Clone, PartialEq)]
pub struct PrunedPick {
    /// The node of least GLM found among those meeting the requirements.
    pub node: Node,
    /// Its GLM.
    pub glm: f64,
    /// Nodes evaluated (each once per search), counting those settled by singleton tuples or by
    /// a probe of their small classes; with [`Self::evaluated_without_suppression`].
    pub evaluated: usize,
    /// Of those, the evaluations of the pick without suppression that a search stopped under a
    /// suppression limit makes (within the same budget again), 0 otherwise.
    pub evaluated_without_suppression: usize,
    /// Nodes visited in bound order (evaluated or decided by tags).
    pub visited: usize,
    /// Whether the search ran to its end (the node is the optimum); false when a budget stopped it.
    pub optimal: bool,
    /// The limit that stopped the search (None when it ran to its end).
    pub stopped_by: Option<Limit>,
    /// Whether no predecessor of the node that meets the requirements loses less (always when
    /// `optimal`; after a stop, when the greedy descent reached its end within the budget).
    pub local_optimum: bool,
    /// A lower bound of the least GLM of any node meeting the requirements: `glm` itself when
    /// `optimal`, else the least bound of the nodes left to visit (every node not visited is
    /// above one of them), so `glm / lower_bound - 1` bounds how far from optimal the pick is.
    pub lower_bound: f64,
}

/// Known statuses: maximal failing nodes (all finer ones fail) and minimal meeting ones (all
/// coarser ones meet), each kept as an antichain.
#[derive(Default)]
struct Tags {
    failing: Vec<Node>,
    meeting: Vec<Node>,
}

/// Whether `a` is at or below `b` in every QI. Compared 32 QIs at a time without a branch per
/// QI (vectorized): tags on thousands of QIs are read in full whenever they are below.
fn leq(a: &[u8], b: &[u8]) -> bool {
    let (mut x, mut y) = (a.chunks_exact(32), b.chunks_exact(32));
    for (p, q) in (&mut x).zip(&mut y) {
        if p.iter().zip(q).fold(false, |above, (u, v)| above | (u > v)) {
            return false;
        }
    }
    x.remainder().iter().zip(y.remainder()).all(|(u, v)| u <= v)
}

impl Tags {
    /// The failing tag above `n` reaching highest (most levels in all), if any.
    fn failing_above(&self, n: &[u8]) -> Option<&Node> {
        self.failing
            .iter()
            .filter(|f| leq(n, f))
            .max_by_key(|f| f.iter().map(|&l| l as usize).sum::<usize>())
    }

    fn status(&self, n: &[u8]) -> Option<bool> {
        if self.known_meets(n) {
            Some(true)
        } else if self.known_fails(n) {
            Some(false)
        } else {
            None
        }
    }

    /// Whether a meeting tag is below `n` (then `n` meets).
    fn known_meets(&self, n: &[u8]) -> bool {
        self.meeting.iter().any(|m| leq(m, n))
    }

    /// Whether a failing tag is above `n` (then `n` fails).
    fn known_fails(&self, n: &[u8]) -> bool {
        self.failing.iter().any(|f| leq(n, f))
    }

    fn fails(&mut self, n: Node) {
        if self.failing.iter().any(|f| leq(&n, f)) {
            return;
        }
        self.failing.retain(|f| !leq(f, &n));
        self.failing.push(n);
    }

    /// For each QI `d`, whether `n` one level lower in `d` is known to fail, in one pass over the
    /// failing tags (a greedy descent reads all the predecessors of a node; on 3000 QIs, reading
    /// each against every tag was most of a pick's time): `n - e_d` is below a tag `f` when `n`
    /// exceeds `f` in no QI but `d`, and there by one level.
    fn failing_predecessors(&self, n: &[u8]) -> Vec<bool> {
        let mut fails = vec![false; n.len()];
        for f in &self.failing {
            let mut over = n.iter().zip(f).enumerate().filter(|(_, (a, b))| a > b);
            match (over.next(), over.next()) {
                // `n` itself is below the tag.
                (None, _) => fails.iter_mut().for_each(|x| *x = true),
                (Some((d, (&a, &b))), None) if a == b + 1 => fails[d] = true,
                _ => {}
            }
        }
        fails
    }

    /// Tags as failing `n` lowered one level in each QI of `lowered` (none of them known to fail):
    /// the antichain [`Tags::fails`] makes of them in turn, in one pass over the tags. They are
    /// incomparable, so each only removes the tags below it: `f <= n - e_d` when `f <= n` and
    /// `f[d] < n[d]`.
    fn fails_predecessors(&mut self, n: &[u8], lowered: &[usize]) {
        if lowered.is_empty() {
            return;
        }
        self.failing
            .retain(|f| !(leq(f, n) && lowered.iter().any(|&d| f[d] < n[d])));
        for &d in lowered {
            let mut p = n.to_vec();
            p[d] -= 1;
            self.failing.push(p);
        }
    }

    fn meets(&mut self, n: Node) {
        if self.meeting.iter().any(|m| leq(m, &n)) {
            return;
        }
        self.meeting.retain(|m| !leq(&n, m));
        self.meeting.push(n);
    }
}

/// The search state.
struct Pick<'a> {
    ev: &'a Evaluator,
    require: &'a [Requirement],
    cache: EvaluationCache<'a>,
    /// What the search reads of a node: GLM, rows suppressed, then each requirement's index.
    wanted: Vec<Index>,
    tags: Tags,
    heights: Vec<u8>,
    /// Every step of the lattice in the order chains take them, when that order is one for all
    /// chains (see [`sorted_steps`]).
    sorted: Option<Vec<Step>>,
    best: Option<(f64, Node)>,
    /// The evaluations the current phase may reach: the search's share, then the whole budget.
    limit: usize,
}

impl Pick<'_> {
    /// Whether [`Self::meets`] of `n` stays within the phase's limit. The budget is checked
    /// before each evaluation, not between visits: a probe evaluates several nodes, and it
    /// overshot `--pick-evaluations` (12 for 10).
    fn affordable(&self, n: &[u8]) -> bool {
        self.cache.evaluations() + self.cache.cost(n) <= self.limit
    }

    /// Evaluates `n` (once) and tells whether it meets the requirements; a meeting node is a
    /// candidate.
    fn meets(&mut self, n: &[u8]) -> Result<bool> {
        self.cache.evaluate(&[n.to_vec()])?;
        if self.cache.fails_k(n) {
            return Ok(false);
        }
        let Some(v) = self.cache.values(n, &self.wanted) else {
            return Ok(false);
        };
        let ok = self.require.iter().zip(&v[2..]).all(|(r, &x)| r.holds(x));
        if ok {
            let glm = v[0];
            let better = self.best.as_ref().is_none_or(|(b, bn)| {
                glm < *b || (glm == *b && finer(n, bn) == std::cmp::Ordering::Less)
            });
            if better {
                self.best = Some((glm, n.to_vec()));
            }
        }
        Ok(ok)
    }

    /// The chain from `n` to the top raising, step by step, the QI whose next level adds the
    /// least to the bound (ties to the first QI): each QI's next increment of the bound (its
    /// terms are per QI) in a heap, least first. Recomputing the whole bound for every QI at
    /// every step made a chain cost QIs² per node: most of a pick's time on 100 QIs.
    fn chain(&self, n: &[u8]) -> Chain {
        let steps = match &self.sorted {
            // One scan of the presorted steps: a heap merge popped each of a 3000-QI chain's
            // 13 500 steps from a heap of 3000 (a tenth of the pick's time).
            Some(sorted) => sorted
                .iter()
                .filter(|s| s.level >= n[s.qi])
                .map(|s| s.qi)
                .collect(),
            None => merged_steps(n, &self.heights, |d, l| self.ev.glm_bound_step(d, l)),
        };
        Chain {
            start: n.to_vec(),
            steps,
        }
    }

    /// Decides `n` by a binary search on its chain to the top (whose top is known to meet),
    /// tagging the nodes around the cut; None when the limit stops it first (what it learned is
    /// tagged all the same).
    fn probe(&mut self, n: &[u8]) -> Result<Option<bool>> {
        let chain = self.chain(n);
        let len = chain.len();
        // Statuses along a chain are monotone (a meeting tag below a node is below every later
        // one; a failing tag above a node is above every earlier one): the first node known to
        // meet and the last before it known to fail are found by binary searches. A scan of
        // the chain read every tag for each of its nodes: on 100 QIs (chains of ~450 nodes,
        // thousands of tags) it was most of the pick's time.
        let mut cursor = chain.cursor();
        let tags = &self.tags;
        let mut hi = first_true(len, |i| tags.known_meets(cursor.at(&chain, i))).min(len - 1);
        let mut lo = first_true(hi, |i| !tags.known_fails(cursor.at(&chain, i))).checked_sub(1);
        loop {
            let start = lo.map_or(0, |l| l + 1);
            if start >= hi {
                break;
            }
            let mid = start + (hi - start) / 2;
            let node = cursor.at(&chain, mid).clone();
            if !self.affordable(&node) {
                break;
            }
            if self.meets(&node)? {
                hi = mid;
            } else {
                lo = Some(mid);
            }
        }
        if let Some(l) = lo {
            self.tags.fails(cursor.at(&chain, l).clone());
        }
        self.tags.meets(cursor.at(&chain, hi).clone());
        let decided = lo.map_or(0, |l| l + 1) >= hi;
        Ok(decided.then_some(hi == 0))
    }
}

/// A chain of nodes from `start` to the top, held as the QI raised at each step: on 3000 QIs a
/// chain has some 13 500 nodes of 3000 levels, 40 MB per probe when every node was kept, while
/// a probe reads a few of them.
struct Chain {
    start: Node,
    steps: Vec<usize>,
}

impl Chain {
    /// Nodes in the chain (the start and one per step).
    fn len(&self) -> usize {
        self.steps.len() + 1
    }

    /// A cursor at the chain's start.
    fn cursor(&self) -> ChainCursor {
        ChainCursor {
            node: self.start.clone(),
            at: 0,
        }
    }
}

/// One step of a chain: raising `qi` from `level` adds `increment` to the bound.
#[derive(Debug, Clone, Copy)]
struct Step {
    increment: f64,
    qi: usize,
    level: u8,
}

/// The steps of the chain from `n` to the top (see `Pick::chain`): each QI's next increment in
/// a heap, least first (ties to the first QI).
fn merged_steps(n: &[u8], heights: &[u8], step: impl Fn(usize, u8) -> f64) -> Vec<usize> {
    let mut at = n.to_vec();
    let mut next: BinaryHeap<Reverse<(Increment, usize)>> = (0..at.len())
        .filter(|&d| at[d] < heights[d])
        .map(|d| Reverse((Increment(step(d, at[d])), d)))
        .collect();
    let mut steps = Vec::new();
    while let Some(Reverse((_, d))) = next.pop() {
        steps.push(d);
        at[d] += 1;
        if at[d] < heights[d] {
            next.push(Reverse((Increment(step(d, at[d])), d)));
        }
    }
    steps
}

/// Every step of the lattice sorted by (increment, QI, level), when each QI's increments do not
/// decrease along its levels; else None. Then the heap merge of [`merged_steps`] from any node
/// takes that node's remaining steps in this order (a merge of sorted runs is their sorted
/// union, and a QI's equal increments leave in level order), so a chain is one filtered scan.
fn sorted_steps(heights: &[u8], step: impl Fn(usize, u8) -> f64) -> Option<Vec<Step>> {
    let mut steps = Vec::new();
    for (qi, &h) in heights.iter().enumerate() {
        let first = steps.len();
        for level in 0..h {
            steps.push(Step {
                increment: step(qi, level),
                qi,
                level,
            });
        }
        if steps[first..]
            .windows(2)
            .any(|w| w[1].increment.total_cmp(&w[0].increment).is_lt())
        {
            return None;
        }
    }
    steps.sort_by(|a, b| {
        a.increment
            .total_cmp(&b.increment)
            .then(a.qi.cmp(&b.qi))
            .then(a.level.cmp(&b.level))
    });
    Some(steps)
}

/// A node of a [`Chain`], moved along it step by step: a binary search on a chain moves about
/// its length in all, where building each node it reads from the start cost the chain's length
/// times the searches' depth (most of a pick's time on 3000 QIs, chains of 13 500 steps).
struct ChainCursor {
    node: Node,
    at: usize,
}

impl ChainCursor {
    /// Node `i` of `chain` (0: the start).
    fn at(&mut self, chain: &Chain, i: usize) -> &Node {
        while self.at < i {
            self.node[chain.steps[self.at]] += 1;
            self.at += 1;
        }
        while self.at > i {
            self.at -= 1;
            self.node[chain.steps[self.at]] -= 1;
        }
        &self.node
    }
}

/// A step's increment of the bound, ordered by `f64::total_cmp` (for the heap).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Increment(f64);

impl Eq for Increment {}

impl PartialOrd for Increment {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Increment {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The first of `0..len` at which `pred`, false then true along it, is true (`len` if never).
fn first_true(len: usize, mut pred: impl FnMut(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

impl Pick<'_> {
    /// After a stop at the budget: greedy descent from the incumbent — its predecessors (one
    /// level lower in one QI) evaluated together, the best meeting one taken while it improves
    /// the incumbent — so that the node returned is a local optimum of the border. Spends at most
    /// the whole budget (the search left it [`DESCENT_SHARE`]), counting only the predecessors not
    /// evaluated yet, and short of room for all of them tries those of least bound that fit;
    /// true when it reached the local optimum (every predecessor tried).
    fn descend(&mut self) -> Result<bool> {
        while let Some((_, current)) = self.best.clone() {
            let known = self.tags.failing_predecessors(&current);
            let mut lowered: Vec<usize> = (0..current.len())
                .filter(|&d| current[d] > 0 && !known[d])
                .collect();
            let mut preds: Vec<Node> = lowered
                .iter()
                .map(|&d| {
                    let mut p = current.clone();
                    p[d] -= 1;
                    p
                })
                .collect();
            let costs: Vec<usize> = preds.iter().map(|p| self.cache.cost(p)).collect();
            let room = self.limit.saturating_sub(self.cache.evaluations());
            // Short of room for every predecessor, those of least bound that fit are tried (on
            // wide tables the descent's share is smaller than a node's QIs: it never stepped).
            // Lowering QI `d` takes its last step off the bound, so the largest steps go first:
            // known per QI, where the bound of each predecessor sums every QI again.
            let partial = costs.iter().sum::<usize>() > room;
            if partial {
                let step = |i: usize| {
                    let d = lowered[i];
                    self.ev.glm_bound_step(d, current[d] - 1)
                };
                let mut order: Vec<usize> = (0..lowered.len()).collect();
                order.sort_by(|&a, &b| step(b).total_cmp(&step(a)).then(a.cmp(&b)));
                let mut spent = 0;
                order.retain(|&i| {
                    let fits = spent + costs[i] <= room;
                    spent += if fits { costs[i] } else { 0 };
                    fits
                });
                if order.is_empty() {
                    return Ok(false);
                }
                lowered = order.iter().map(|&i| lowered[i]).collect();
                preds = order
                    .iter()
                    .map(|&i| std::mem::take(&mut preds[i]))
                    .collect();
            }
            self.cache.evaluate(&preds)?;
            let mut failing = Vec::new();
            for (p, &d) in preds.iter().zip(&lowered) {
                if !self.meets(p)? {
                    failing.push(d);
                }
            }
            self.tags.fails_predecessors(&current, &failing);
            if self.best.as_ref().is_some_and(|(_, b)| *b == current) {
                // A local optimum only when every predecessor was tried.
                return Ok(!partial);
            }
        }
        Ok(true)
    }
}

/// The node of least GLM meeting `require` (every requirement monotone: see
/// [`Requirement::is_monotone`]), found without enumerating the lattice. `ev` must compute the
/// indices the requirements read. None when not even the top node meets them.
pub fn pick_min_glm(ev: &Evaluator, require: &[Requirement]) -> Result<Option<PrunedPick>> {
    pick_min_glm_within(ev, require, Budget::for_rows(ev.dataset().num_rows()))
}

/// [`pick_min_glm`] within `budget`: past it, the best meeting node found, improved by a greedy
/// descent, with `optimal: false`.
pub fn pick_min_glm_within(
    ev: &Evaluator,
    require: &[Requirement],
    budget: Budget,
) -> Result<Option<PrunedPick>> {
    // On a small table, evaluating a node costs less than looking for its singleton tuples.
    let imply = ev.dataset().num_rows() >= IMPLY_MIN_ROWS;
    search(ev, require, budget, imply)
}

/// [`pick_min_glm_within`] implying nodes from singleton tuples whatever the table's size (it
/// does so from [`IMPLY_MIN_ROWS`] encoded rows): the same pick, by other means.
pub fn pick_min_glm_implying(
    ev: &Evaluator,
    require: &[Requirement],
    budget: Budget,
) -> Result<Option<PrunedPick>> {
    search(ev, require, budget, true)
}

fn search(
    ev: &Evaluator,
    require: &[Requirement],
    budget: Budget,
    imply: bool,
) -> Result<Option<PrunedPick>> {
    let heights = ev.lattice().heights().to_vec();
    let wanted: Vec<Index> = [Index::Glm, Index::Suppressed]
        .into_iter()
        .chain(require.iter().map(|r| r.measure))
        .collect();
    let mut s = Pick {
        ev,
        require,
        // Nodes below one with more than η singleton tuples fail any k >= 2 unevaluated, and so
        // do those whose probe shows more than η tuples in classes smaller than the k required.
        cache: if imply {
            EvaluationCache::wanting(ev, &wanted).failing_k(
                require
                    .iter()
                    .filter_map(Requirement::least_class_size)
                    .max(),
            )
        } else {
            EvaluationCache::new(ev)
        },
        wanted,
        tags: Tags::default(),
        heights: heights.clone(),
        sorted: sorted_steps(&heights, |d, l| ev.glm_bound_step(d, l)),
        best: None,
        limit: budget.search_evaluations(),
    };
    // Within any budget: it is at least the bottom's evaluation and the top's.
    let top = ev.lattice().top();
    if !s.meets(&top)? {
        return Ok(None);
    }
    s.tags.meets(top);
    let suppresses = ev.suppression_limit() > 0;
    // Best-first by the bound; the bound's bits order like the (non-negative) bound.
    let key = |n: &Node| (ev.glm_bound(n).max(0.0).to_bits(), n.clone());
    let mut heap: BinaryHeap<Reverse<(u64, Node)>> = BinaryHeap::new();
    let mut seen: HashSet<Node> = HashSet::new();
    let bottom = ev.lattice().bottom();
    seen.insert(bottom.clone());
    heap.push(Reverse(key(&bottom)));
    let mut visited = 0usize;
    let mut stopped_by = None;
    // The least bound of the nodes not visited when the search stopped.
    let mut left = f64::INFINITY;
    while let Some(Reverse((bits, n))) = heap.pop() {
        let bound = f64::from_bits(bits);
        if let Some((b, _)) = &s.best
            && bound > b + 1e-9 * b.abs().max(1.0)
        {
            break;
        }
        let queued_bytes = seen.len().saturating_mul(2 * n.len() + 96);
        stopped_by = if s.cache.evaluations() >= s.limit {
            Some(Limit::Evaluations)
        } else if visited >= budget.visited {
            Some(Limit::Visited)
        } else if queued_bytes > MAX_QUEUE_BYTES {
            Some(Limit::QueueBytes)
        } else {
            None
        };
        if stopped_by.is_some() {
            left = bound;
            break;
        }
        let meets = match s.tags.status(&n) {
            Some(m) => Some(m),
            None => s.probe(&n)?,
        };
        // The limit can stop a probe, or leave a meeting node unevaluated: `n` is then left.
        if meets.is_none() || meets == Some(true) && !s.affordable(&n) {
            stopped_by = Some(Limit::Evaluations);
            left = bound;
            break;
        }
        visited += 1;
        // What to queue next: every node that may still do better is above one of them.
        let above: Option<&[u8]> = if meets == Some(true) {
            s.meets(&n)?;
            // A coarser node can lose less only by suppressing less.
            let suppressed = s.cache.values(&n, &[Index::Suppressed]);
            (suppresses && suppressed.is_some_and(|v| v[0] > 0.0)).then_some(&n)
        } else {
            // Every node below a failing tag fails: a node above `n` that may meet exceeds the
            // tag in some QI, so it is above one of the tag's escapes from `n` — one jump over
            // the whole failing region instead of a visit to each node in it.
            s.tags.failing_above(&n).map(|f| f.as_slice()).or(Some(&n))
        };
        if let Some(f) = above {
            for d in 0..n.len() {
                if f[d] < heights[d] {
                    let mut m = n.clone();
                    m[d] = f[d] + 1;
                    if seen.insert(m.clone()) {
                        heap.push(Reverse(key(&m)));
                    }
                }
            }
        }
    }
    let optimal = stopped_by.is_none();
    // Under a suppression limit the nodes that meet only by suppressing can use up the budget
    // before the search reaches those that meet without it: the pick without suppression (a
    // search whose meeting nodes end their branch) is a candidate too, judged under the limit.
    let mut fallback_evaluations = 0;
    drop((heap, seen));
    s.limit = budget.total();
    if !optimal && suppresses {
        let strict = ev.with_suppression_limit(0);
        let rule = strict.suppression_rule();
        if require.iter().all(|r| r.is_monotone(rule, 0))
            && let Some(p) = search(&strict, require, budget, imply)?
        {
            fallback_evaluations = p.evaluated;
            // The search left room for it (see `Budget::search_evaluations`) unless the budget
            // is the bottom and the top, and then the fallback returns the top.
            if s.affordable(&p.node) {
                s.meets(&p.node)?;
            }
        }
    }
    let local_optimum = optimal || s.descend()?;
    Ok(s.best.map(|(glm, node)| PrunedPick {
        node,
        glm,
        evaluated: s.cache.evaluations() + fallback_evaluations,
        evaluated_without_suppression: fallback_evaluations,
        visited,
        optimal,
        stopped_by,
        local_optimum,
        lower_bound: left.min(glm),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A chain read from the presorted steps is the heap merge's chain, from any node, when
        /// every QI's increments do not decrease (few distinct increments, so ties between QIs
        /// and within one are common); otherwise no presorted order is offered.
        #[test]
        fn presorted_steps_give_the_heap_merges_chains(
            runs in proptest::collection::vec(proptest::collection::vec(0u8..4, 0..5), 1..7),
            at in proptest::collection::vec(0u8..5, 7),
            monotone in any::<bool>(),
        ) {
            // Each QI's increments: a run made non-decreasing by prefix sums (or left as drawn).
            let increments: Vec<Vec<f64>> = runs
                .iter()
                .map(|r| {
                    let mut sum = 0.0;
                    r.iter()
                        .map(|&x| match monotone {
                            true => { sum += f64::from(x); sum }
                            false => f64::from(x),
                        })
                        .collect()
                })
                .collect();
            let heights: Vec<u8> = increments.iter().map(|v| v.len() as u8).collect();
            let n: Vec<u8> = heights.iter().zip(&at).map(|(&h, &a)| a.min(h)).collect();
            let step = |d: usize, l: u8| increments[d][l as usize];
            let sorted = sorted_steps(&heights, step);
            let non_decreasing = increments
                .iter()
                .all(|v| v.windows(2).all(|w| w[0] <= w[1]));
            prop_assert_eq!(sorted.is_some(), non_decreasing);
            if let Some(sorted) = sorted {
                let scanned: Vec<usize> = sorted
                    .iter()
                    .filter(|s| s.level >= n[s.qi])
                    .map(|s| s.qi)
                    .collect();
                prop_assert_eq!(scanned, merged_steps(&n, &heights, step));
            }
        }

        /// The one-pass reads and updates of a descent step agree with the node-by-node ones:
        /// each predecessor's status against every tag, and tagging the failing ones in turn.
        #[test]
        fn a_descent_step_reads_and_tags_as_node_by_node(
            // Few QIs and levels, so that tags and predecessors are often comparable.
            tags in proptest::collection::vec(proptest::collection::vec(0u8..3, 6), 0..12),
            n in proptest::collection::vec(0u8..3, 6),
            failing in proptest::collection::vec(any::<bool>(), 6),
        ) {
            let mut by_node = Tags::default();
            for t in &tags {
                by_node.fails(t.clone());
            }
            let mut one_pass = Tags { failing: by_node.failing.clone(), meeting: Vec::new() };
            let known = one_pass.failing_predecessors(&n);
            let mut lowered = Vec::new();
            for d in 0..n.len() {
                let mut p = n.clone();
                if n[d] == 0 {
                    continue;
                }
                p[d] -= 1;
                prop_assert_eq!(known[d], by_node.known_fails(&p), "QI {}", d);
                if !known[d] && failing[d] {
                    lowered.push(d);
                }
            }
            for &d in &lowered {
                let mut p = n.clone();
                p[d] -= 1;
                by_node.fails(p);
            }
            one_pass.fails_predecessors(&n, &lowered);
            prop_assert_eq!(one_pass.failing, by_node.failing);
        }

        /// The vectorized comparison of nodes is the plain one, on either side of 32 QIs.
        #[test]
        fn leq_is_the_plain_comparison(
            pair in (1usize..80).prop_flat_map(|q| (
                proptest::collection::vec(0u8..3, q),
                proptest::collection::vec(0u8..3, q),
            )),
        ) {
            let (a, b) = pair;
            prop_assert_eq!(leq(&a, &b), a.iter().zip(&b).all(|(x, y)| x <= y));
        }
    }
}
