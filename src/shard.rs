//! The analysis of messages split over shards of the connections, for a
//! front end that runs them on several cores (`stats`), with outputs equal,
//! output for output and in the same order, to one [`MessageAnalyzer`] fed
//! every event.
//!
//! One [`Pipeline`](crate::pipeline::Pipeline) reassembles and frames every
//! connection: its bounds and timers (reorder windows, idle sweeps, the
//! connection table) and its stream numbers span connections, so it stays
//! one. Its events go through a [`Router`], which gives each one its place
//! in the order (`seq`) and its shard: the connection's, by its stream
//! number (one for both directions, so a request and its response meet in
//! the same shard). A shard is a [`MessageAnalyzer::shard`]: it decodes and
//! pairs its connections' messages, numbered as the router numbers them
//! (the numbering one analyzer would give: every message of an open
//! connection, in event order). The [`Merge`] takes the shards' outputs back
//! in `seq` order and makes the one step that spans connections in capture
//! order: topic names learned from responses, and topic ids named with
//! them ([`crate::analyzer::name_topics`]). At the end each shard reports
//! its unanswered requests, merged by stream as one analyzer reports them.
//!
//! Nothing here runs a thread: the front end runs the shards where it
//! likes, pushing each one's events in the order the router gave them.

use rustc_hash::FxHashSet;

use crate::analyzer::{name_topics, needs_names, AnalyzerConfig, MessageAnalyzer, Notice, Output};
use crate::pipeline::Event;
use crate::topics::TopicNames;

/// An event with its place in the order and, for a message, its number.
#[derive(Debug)]
pub struct Routed {
    /// The event's place among all events (from 0).
    pub seq: u64,
    /// The number its message takes ([`MessageAnalyzer::push_numbered`]).
    pub index: u64,
    /// The event.
    pub ev: Event,
}

/// An output of a shard with the `seq` of the event that made it.
#[derive(Debug)]
pub struct ShardOutput {
    seq: u64,
    /// A message whose topics the [`Merge`] names.
    to_name: bool,
    output: Output,
}

impl ShardOutput {
    /// The output.
    pub fn output_mut(&mut self) -> &mut Output {
        &mut self.output
    }
}

/// Gives each pipeline event its place and its shard.
#[derive(Debug)]
pub struct Router {
    shards: usize,
    /// Connections opened and not closed: their messages are numbered
    /// (a [`MessageAnalyzer`] analyses messages of these only).
    open: FxHashSet<u64>,
    seq: u64,
    next_index: u64,
}

impl Router {
    /// A router over `shards` shards (at least one).
    pub fn new(shards: usize) -> Router {
        Router {
            shards: shards.max(1),
            open: FxHashSet::default(),
            seq: 0,
            next_index: 0,
        }
    }

    /// The number of shards.
    pub fn shards(&self) -> usize {
        self.shards
    }

    /// The `seq` the next event routed takes: the events routed so far.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The shard of `ev` and the event routed: a connection's events go to
    /// its shard, an event of no connection to the first.
    pub fn route(&mut self, ev: Event) -> (usize, Routed) {
        let (shard, seq, index) = self.place(&ev);
        (shard, Routed { seq, index, ev })
    }

    /// What [`Router::route`] gives `ev`, without taking it: its shard, its
    /// `seq` and its number. A shard run where the events are routed takes
    /// each one as it comes ([`Shard::push_at`]): an event of a few hundred
    /// bytes is not moved into a [`Routed`] and out again.
    pub fn place(&mut self, ev: &Event) -> (usize, u64, u64) {
        let index = self.next_index;
        match ev {
            Event::StreamOpen(o) => {
                self.open.insert(o.stream);
            }
            Event::StreamClosed { stream, .. } => {
                self.open.remove(stream);
            }
            Event::Message(m) | Event::ScannedRequest(m, _) | Event::ScannedResponse(m, _)
                if self.open.contains(&m.stream) =>
            {
                self.next_index += 1;
            }
            _ => {}
        }
        let seq = self.seq;
        self.seq += 1;
        (self.shard(ev), seq, index)
    }

    /// The shard [`Router::route`] sends `ev` to (an event of no
    /// connection: the first).
    pub fn shard(&self, ev: &Event) -> usize {
        ev.stream().map_or(0, |s| shard_of(s, self.shards))
    }
}

/// The shard of connection `stream` among `shards` (at least one).
pub fn shard_of(stream: u64, shards: usize) -> usize {
    // Streams are numbered as connections open: consecutive connections go
    // to different shards.
    (stream % shards.max(1) as u64) as usize
}

/// One shard's analysis: [`MessageAnalyzer::shard`] taking routed events.
pub struct Shard {
    analyzer: MessageAnalyzer,
    cfg: AnalyzerConfig,
    /// Outputs of one event (reused).
    scratch: Vec<Output>,
    /// No name, ever: a message that needs none has its topics settled
    /// here, where it was just made ([`needs_names`]).
    none: TopicNames,
}

impl Shard {
    /// A shard of `analyzer`'s analysis.
    pub fn new(analyzer: &MessageAnalyzer) -> Shard {
        Shard {
            analyzer: analyzer.shard(),
            cfg: analyzer.config().clone(),
            scratch: Vec::new(),
            none: TopicNames::default(),
        }
    }

    /// Analyses one routed event (in the order routed), appending its
    /// outputs with its `seq`.
    pub fn push(&mut self, r: Routed, out: &mut Vec<ShardOutput>) {
        self.push_at(r.seq, r.index, r.ev, out);
    }

    /// [`Shard::push`] of an event placed by [`Router::place`].
    pub fn push_at(&mut self, seq: u64, index: u64, ev: Event, out: &mut Vec<ShardOutput>) {
        self.analyzer.push_numbered(index, ev, &mut self.scratch);
        for mut output in self.scratch.drain(..) {
            let to_name = match &mut output {
                Output::Message(rec) if !needs_names(&self.cfg, rec) => {
                    name_topics(&mut self.none, &self.cfg, rec);
                    false
                }
                Output::Message(_) => true,
                Output::Notice(_) => false,
            };
            out.push(ShardOutput {
                seq,
                to_name,
                output,
            });
        }
    }

    /// End of input (after every event): the shard's connections close and
    /// their unanswered requests are reported, by stream.
    pub fn finish(&mut self, out: &mut Vec<Output>) {
        self.analyzer.finish(out);
    }
}

/// Puts the shards' outputs back in one analyzer's order and names topics.
pub struct Merge {
    cfg: AnalyzerConfig,
    topics: TopicNames,
}

impl Merge {
    /// The merge of shards of `analyzer` ([`Shard::new`]).
    pub fn new(analyzer: &MessageAnalyzer) -> Merge {
        Merge {
            cfg: analyzer.config().clone(),
            topics: TopicNames::default(),
        }
    }

    /// Takes the outputs every shard made of the same run of routed events
    /// (each in its own `seq` order) and appends them in `seq` order, each
    /// message's topics named; with `seqs`, the `seq` of the event that made
    /// each one there (where a front end printing frame by frame finds the
    /// frames' ends).
    pub fn merge(
        &mut self,
        parts: &mut [Vec<ShardOutput>],
        out: &mut Vec<Output>,
        mut seqs: Option<&mut Vec<u64>>,
    ) {
        let mut heads: Vec<_> = parts
            .iter_mut()
            .map(|p| std::mem::take(p).into_iter().peekable())
            .collect();
        out.reserve(heads.iter().map(|h| h.len()).sum());
        loop {
            // Few shards: the smallest head by a scan.
            let next = heads
                .iter_mut()
                .enumerate()
                .filter_map(|(i, h)| h.peek().map(|o| (o.seq, i)))
                .min();
            let Some((_, i)) = next else {
                break;
            };
            let Some(mut o) = heads.get_mut(i).and_then(Iterator::next) else {
                break;
            };
            if let (true, Output::Message(rec)) = (o.to_name, &mut o.output) {
                name_topics(&mut self.topics, &self.cfg, rec);
            }
            if let Some(s) = seqs.as_deref_mut() {
                s.push(o.seq);
            }
            out.push(o.output);
        }
    }

    /// Appends the shards' end-of-input reports ([`Shard::finish`]) in the
    /// order one analyzer gives them: by stream.
    pub fn finish(&mut self, parts: &mut [Vec<Output>], out: &mut Vec<Output>) {
        let mut all: Vec<Output> = parts.iter_mut().flat_map(std::mem::take).collect();
        // Stable: a stream's reports keep their order.
        all.sort_by_key(|o| match o {
            Output::Notice(n) => match **n {
                Notice::Unanswered { stream, .. } => stream,
                _ => u64::MAX,
            },
            Output::Message(_) => u64::MAX,
        });
        out.extend(all);
    }

    /// Topic names learned so far.
    pub fn topic_names(&self) -> &TopicNames {
        &self.topics
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{FileSource, FrameSource, Polled};
    use crate::pipeline::Pipeline;
    use crate::stats::Stats;

    /// Every capture's outputs from one analyzer and from 1 to 4 shards
    /// routed, run one after another and merged: equal, in order.
    #[test]
    fn shards_give_what_one_analyzer_gives() {
        let paths = crate::test_captures::all();
        assert!(!paths.is_empty());
        let configs = [
            ("print", AnalyzerConfig::default()),
            ("stats", Stats::analyzer_config(AnalyzerConfig::default())),
            ("trees", crate::test_captures::full_trees()),
        ];
        let mut compared = 0usize;
        for path in &paths {
            for (name, cfg) in &configs {
                let one = single(path, cfg);
                for n in 1..=4 {
                    let many = sharded(path, cfg, n);
                    assert_eq!(one.len(), many.len(), "{} {name} {n}", path.display());
                    for (k, (a, b)) in one.iter().zip(&many).enumerate() {
                        assert_eq!(a, b, "{} {name} {n} shards: output {k}", path.display());
                    }
                }
                compared += one.len();
            }
        }
        assert!(compared > 1000, "{compared}");
    }

    fn single(path: &std::path::Path, cfg: &AnalyzerConfig) -> Vec<String> {
        let out = crate::test_captures::outputs(path, cfg.clone());
        out.iter().map(|o| format!("{o:?}")).collect()
    }

    fn sharded(path: &std::path::Path, cfg: &AnalyzerConfig, n: usize) -> Vec<String> {
        let Ok(mut src) = FileSource::open(path.to_str().unwrap_or("")) else {
            return Vec::new();
        };
        let mut pipeline = Pipeline::new(cfg.pipeline.clone());
        let an = MessageAnalyzer::new(cfg.clone());
        let mut router = Router::new(n);
        let mut shards: Vec<Shard> = (0..n).map(|_| Shard::new(&an)).collect();
        let mut merge = Merge::new(&an);
        let mut evs = Vec::new();
        let mut parts: Vec<Vec<ShardOutput>> = (0..n).map(|_| Vec::new()).collect();
        let mut out = Vec::new();
        let mut run = |evs: &mut Vec<Event>, out: &mut Vec<Output>| {
            let (from, had) = (router.seq(), out.len());
            for ev in evs.drain(..) {
                let (i, r) = router.route(ev);
                shards[i].push(r, &mut parts[i]);
            }
            // Each output's seq, in order, among the run's events.
            let mut seqs = Vec::new();
            merge.merge(&mut parts, out, Some(&mut seqs));
            assert_eq!(seqs.len(), out.len() - had);
            assert!(seqs.is_sorted(), "{seqs:?}");
            assert!(seqs.iter().all(|s| (from..router.seq()).contains(s)));
        };
        // Frames in runs of 7, as a front end hands over batches.
        let mut frames = 0;
        loop {
            match src.poll() {
                Ok(Polled::Frame(f)) => pipeline.push(f, &mut evs),
                Ok(Polled::Timeout) => continue,
                _ => break,
            }
            frames += 1;
            if frames % 7 == 0 {
                run(&mut evs, &mut out);
            }
        }
        pipeline.finish(&mut evs);
        run(&mut evs, &mut out);
        let mut ends: Vec<Vec<Output>> = vec![Vec::new(); n];
        for (s, e) in shards.iter_mut().zip(&mut ends) {
            s.finish(e);
        }
        merge.finish(&mut ends, &mut out);
        out.iter().map(|o| format!("{o:?}")).collect()
    }
}
