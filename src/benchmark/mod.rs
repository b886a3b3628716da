//! `kernels benchmark`: the benchmark classes a kernel repository ships in
//! `benchmarks/benchmark*.py` (the protocol of reference 0.17.2's
//! `kernels.benchmark.Benchmark`), run through the project's Python, offline,
//! against exactly the variant [`crate::check::locate`] finds verified in the
//! cache.
//!
//! The embedded driver (`driver.py`, JSON request on stdin, one marked JSON
//! line per event on stdout) imports each kernel directly from its variant
//! directory and, per class and `benchmark_<name>` method, makes a fresh
//! instance (`kernel`, `device`, the class's `seed` applied), calls
//! `setup_<name>` or else `setup`, runs the method once, compares `self.out`
//! with what `verify_<name>` returns (`torch.allclose`, `atol=1e-2`, as the
//! reference), then, after `warmup` untimed calls of each, times
//! `verify_<name>` (the reference implementation) and the method alternately,
//! call by call: with CUDA events on a CUDA device (`cuda_event`), else with
//! the wall clock around the call and a device synchronisation (`wall_clock`).
//! With a candidate kernel (`--against`) both take their turns in the same
//! alternation: loaded in the same process, or, for a local build
//! ([`Target::candidate_apart`]), the candidate in a second interpreter that
//! the driver starts (the same driver in worker mode) and asks, call by
//! call, to set up, check, warm up, measure the peak memory of and time its
//! own instance of the workload; each side measures its own calls. Timing goes in rounds of
//! `iterations` calls each, repeated until every speed-up's
//! [`stats::Verdict`] is decided or the round budget has passed (at least one
//! round). The raw times come back; the statistics are computed here
//! ([`stats`]).
//!
//! A workload that raises is reported and the others go on. One that takes
//! longer than the time limit (or kills the interpreter) is recorded as such,
//! the interpreter is ended, and a new one resumes after it, skipping what is
//! done ([`run`]).

pub mod candidate;
pub mod stats;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use stats::Timing;

/// The driver run by the project's interpreter (see the module docs).
const DRIVER: &str = include_str!("driver.py");

/// The prefix of the driver's event lines on stdout.
const MARK: &str = "@kernels-benchmark@ ";

/// Lines of the interpreter's stderr kept when it dies.
const STDERR_TAIL: usize = 8;

/// Longest wait for an interpreter to start (import torch), when the time
/// limit is shorter.
const STARTUP_LIMIT: Duration = Duration::from_secs(120);

/// Reference 0.17.2's default number of timed calls per workload.
pub const DEFAULT_ITERATIONS: usize = 100;

/// Reference 0.17.2's default number of untimed calls before timing.
pub const DEFAULT_WARMUP: usize = 10;

/// One kernel variant to import: its directory and Python package.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Variant {
    /// `<snapshot>/build/<variant>`.
    pub variant_dir: PathBuf,
    /// The Python package name ([`crate::check::ImportTarget::package`]).
    pub package: String,
}

/// One kernel to benchmark.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Target {
    /// The kernel whose benchmarks run ("ours").
    #[serde(flatten)]
    pub kernel: Variant,
    /// Its scripts, `benchmarks/benchmark*.py` of the snapshot, sorted.
    pub scripts: Vec<PathBuf>,
    /// A second version timed with the same workloads (`--against`).
    pub candidate: Option<Variant>,
    /// Whether the candidate runs in an interpreter of its own (a local
    /// build: its op namespace may be the locked build's, and torch aborts
    /// when one process loads both), its calls still interleaved with the
    /// locked version's, one by one.
    pub candidate_apart: bool,
}

/// The scripts of a snapshot: `benchmarks/benchmark*.py`, sorted by name (the
/// reference's glob); empty when there is no such folder or file.
pub fn scripts_in(snapshot_dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs_err::read_dir(snapshot_dir.join("benchmarks")) else {
        return Vec::new();
    };
    let mut scripts: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
            name.is_some_and(|n| n.starts_with("benchmark") && n.ends_with(".py")) && p.is_file()
        })
        .collect();
    scripts.sort();
    scripts
}

/// How to run the driver.
#[derive(Debug, Clone)]
pub struct Options<'a> {
    /// The project's interpreter.
    pub python: &'a Path,
    /// The hub cache the kernels were verified in (set for the interpreter).
    pub cache_dir: &'a Path,
    /// Timed calls per workload (at least 1).
    pub iterations: usize,
    /// Untimed calls before timing.
    pub warmup: usize,
    /// Longest a workload (or a kernel's import) may take.
    pub time_limit: Duration,
    /// How long a workload's timing rounds may go on to decide its
    /// speed-ups (zero: one round).
    pub budget: Duration,
}

/// The machine the driver ran on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    /// The torch device the workloads ran on: `cuda`, `xpu`, `mps` or `cpu`.
    pub device: String,
    /// `torch.cuda.get_device_name(0)` on a CUDA device.
    pub gpu: Option<String>,
    /// Its compute capability, `major.minor`.
    pub capability: Option<String>,
    /// The NVIDIA driver version (`nvidia-smi`), when known.
    pub driver: Option<String>,
    /// `torch.__version__`.
    pub torch: Option<String>,
    /// `torch.version.cuda`.
    pub cuda: Option<String>,
    /// The interpreter's version.
    pub python: Option<String>,
    /// `platform.system()` and `platform.release()`.
    pub os: Option<String>,
    /// `platform.processor()` or `platform.machine()`.
    pub cpu: Option<String>,
}

/// Everything one benchmark run found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BenchRun {
    /// The machine.
    pub machine: Machine,
    /// `cuda_event` or `wall_clock`.
    pub timing: String,
    /// One per [`Target`], in order.
    pub kernels: Vec<KernelRun>,
}

/// One kernel of a [`BenchRun`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KernelRun {
    /// Why the kernel (or its candidate) did not import, if it did not.
    pub load_error: Option<Vec<String>>,
    /// Scripts that could not be read, or defined no workload: (file name, error).
    pub script_errors: Vec<(String, Vec<String>)>,
    /// The workloads, in the order they ran.
    pub workloads: Vec<Workload>,
}

/// One `benchmark_<name>` method of one class.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// The script's file name.
    pub script: String,
    /// The class.
    pub class: String,
    /// The workload name (the method without `benchmark_`).
    pub method: String,
    /// What happened.
    pub outcome: Outcome,
}

/// The outcome of one workload.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Timed.
    Timed(Box<Measured>),
    /// Raised: the exception's lines and where.
    Failed(Vec<String>),
    /// Took longer than the time limit; the interpreter was ended.
    TimedOut(Duration),
    /// The interpreter exited during it: its status and stderr tail.
    Died(String, Vec<String>),
}

/// The measurements of a timed workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// `self.out`'s shape, `AxB`.
    pub shape: Option<String>,
    /// `self.out`'s dtype, without `torch.`.
    pub dtype: Option<String>,
    /// Whether `verify_<name>` matched: one per kernel timed (ours, then the
    /// candidate); `None` without a `verify_<name>`.
    pub matches: Option<Vec<bool>>,
    /// The largest absolute difference from the reference, per kernel.
    pub max_abs_diff: Option<Vec<Option<f64>>>,
    /// The kernel's times.
    pub ours: Timing,
    /// `verify_<name>`'s times, if it has one.
    pub reference: Option<Timing>,
    /// The candidate's times (`--against`).
    pub candidate: Option<Timing>,
    /// Timing rounds of `iterations` calls each that ran (at least 1).
    pub rounds: usize,
    /// CUDA memory still allocated after the workload, beyond what was before.
    pub leaked_bytes: Option<u64>,
    /// Peak CUDA memory of one call of each implementation, on CUDA only.
    pub peak: Option<PeakMemory>,
}

/// Peak CUDA memory (bytes) of one call of a workload, above what was
/// allocated before the call (`torch.cuda.max_memory_allocated` after
/// `torch.cuda.reset_peak_memory_stats`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PeakMemory {
    /// The locked kernel's call.
    pub ours: Option<u64>,
    /// The reference implementation (`verify_<name>`), if it has one.
    pub reference: Option<u64>,
    /// The candidate's call (`--against`).
    pub candidate: Option<u64>,
}

/// The interpreter could not be run, or said nothing usable.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("cannot run `{}` to benchmark the kernels: {reason}", python.display())]
#[diagnostic(
    code(kernels::benchmark::no_python),
    help(
        "`kernels benchmark` runs in the project's Python, which needs torch: activate its virtual environment (VIRTUAL_ENV) or create `<project>/.venv`"
    )
)]
pub struct BenchmarkError {
    /// The interpreter.
    pub python: PathBuf,
    /// What went wrong.
    pub reason: String,
}

#[derive(Serialize)]
struct Request<'a> {
    /// The driver's own source, which a candidate's interpreter runs.
    driver: &'static str,
    iterations: usize,
    warmup: usize,
    budget_s: f64,
    skip: &'a BTreeSet<String>,
    kernels: &'a [Target],
}

/// One event line of the driver.
#[derive(Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Event {
    Start { machine: Machine, timing: String },
    Loading { kernel: usize },
    Kernel(KernelEvent),
    Reading { kernel: usize, script: String },
    Script(ScriptEvent),
    Begin(Begin),
    Result(ResultEvent),
    Done,
}

#[derive(Deserialize)]
struct KernelEvent {
    kernel: usize,
    loaded: bool,
    #[serde(default)]
    error: Vec<String>,
}

#[derive(Deserialize)]
struct ScriptEvent {
    kernel: usize,
    script: String,
    #[serde(default)]
    error: Option<Vec<String>>,
}

#[derive(Deserialize, Clone)]
struct Begin {
    id: String,
    kernel: usize,
    script: String,
    class: String,
    method: String,
}

#[derive(Deserialize)]
struct ResultEvent {
    id: String,
    #[serde(default)]
    error: Option<Vec<String>>,
    #[serde(default)]
    shape: Option<String>,
    #[serde(default)]
    dtype: Option<String>,
    #[serde(default)]
    r#match: Option<Vec<bool>>,
    #[serde(default)]
    max_abs_diff: Option<Vec<Option<f64>>>,
    #[serde(default)]
    ours_ms: Vec<f64>,
    #[serde(default)]
    reference_ms: Option<Vec<f64>>,
    #[serde(default)]
    candidate_ms: Option<Vec<f64>>,
    #[serde(default)]
    rounds: Option<usize>,
    #[serde(default)]
    leaked_bytes: Option<u64>,
    #[serde(default)]
    peak_bytes: Option<PeakMemory>,
}

/// What the interpreter was doing when it stopped answering or exited.
enum Busy {
    Idle,
    Loading(usize),
    Reading(usize, String),
    Running(Begin),
}

/// How one interpreter run ended.
enum Ending {
    /// The driver said `done`.
    Done,
    /// Nothing came within the time limit.
    Hung,
    /// The interpreter exited before `done`: status and stderr tail.
    Exited(String, Vec<String>),
}

/// Runs every target's benchmarks (see the module docs): one interpreter,
/// and a new one after each that hangs or dies, resuming after the workload
/// (or kernel import) it stopped in. Errors only when the first interpreter
/// cannot be started or never reports its start.
pub fn run(options: &Options<'_>, targets: &[Target]) -> Result<BenchRun, BenchmarkError> {
    let mut state = State {
        run: BenchRun {
            kernels: vec![KernelRun::default(); targets.len()],
            ..BenchRun::default()
        },
        started: false,
        started_here: false,
        busy: Busy::Idle,
        skip: BTreeSet::new(),
    };
    loop {
        let progress = state.skip.len();
        let ending = run_once(options, targets, &mut state)?;
        let stalled = state.skip.len() == progress;
        let busy = std::mem::replace(&mut state.busy, Busy::Idle);
        let outcome = match ending {
            Ending::Done => return Ok(state.run),
            Ending::Hung => Outcome::TimedOut(options.time_limit),
            Ending::Exited(status, tail) => Outcome::Died(status, tail),
        };
        match busy {
            Busy::Running(begin) => state.finish(&begin, outcome),
            Busy::Loading(kernel) => {
                state.skip.insert(format!("k{kernel}"));
                state.run.kernels[kernel].load_error = Some(vec![describe(&outcome, "import")]);
            }
            Busy::Reading(kernel, script) => {
                state.skip.insert(format!("k{kernel}/{script}"));
                let error = vec![describe(&outcome, "reading")];
                state.run.kernels[kernel]
                    .script_errors
                    .push((script, error));
            }
            // Between workloads: nothing to blame, nothing more to run.
            Busy::Idle if stalled => return Ok(state.run),
            Busy::Idle => {}
        }
    }
}

/// The one-line account of a hang or a death while importing a kernel or
/// reading a script (`what`).
fn describe(outcome: &Outcome, what: &str) -> String {
    match outcome {
        Outcome::TimedOut(limit) => format!("{what} took longer than {}s", limit.as_secs()),
        Outcome::Died(status, _) => format!("the interpreter exited ({status}) during {what}"),
        Outcome::Timed(_) | Outcome::Failed(_) => String::new(),
    }
}

/// What the runs so far have found.
struct State {
    run: BenchRun,
    /// Whether any interpreter reported its start.
    started: bool,
    /// Whether the current one did.
    started_here: bool,
    busy: Busy,
    /// Workloads (`k<i>/<script>/<Class>.<method>`) and kernels (`k<i>`) the
    /// next interpreter skips: done, hung or failed to import.
    skip: BTreeSet<String>,
}

impl State {
    fn finish(&mut self, begin: &Begin, outcome: Outcome) {
        self.skip.insert(begin.id.clone());
        if let Some(kernel) = self.run.kernels.get_mut(begin.kernel) {
            kernel.workloads.push(Workload {
                script: begin.script.clone(),
                class: begin.class.clone(),
                method: begin.method.clone(),
                outcome,
            });
        }
    }

    fn apply(&mut self, event: Event) -> bool {
        match event {
            Event::Start { machine, timing } => {
                self.started = true;
                self.started_here = true;
                self.run.machine = machine;
                self.run.timing = timing;
            }
            Event::Loading { kernel } => self.busy = Busy::Loading(kernel),
            Event::Kernel(k) => {
                self.busy = Busy::Idle;
                if !k.loaded && k.kernel < self.run.kernels.len() {
                    self.skip.insert(format!("k{}", k.kernel));
                    self.run.kernels[k.kernel].load_error = Some(k.error);
                }
            }
            Event::Reading { kernel, script } => self.busy = Busy::Reading(kernel, script),
            Event::Script(s) => {
                self.busy = Busy::Idle;
                if let (Some(kernel), Some(error)) = (self.run.kernels.get_mut(s.kernel), s.error) {
                    let entry = (s.script, error);
                    if !kernel.script_errors.contains(&entry) {
                        kernel.script_errors.push(entry);
                    }
                }
            }
            Event::Begin(begin) => self.busy = Busy::Running(begin),
            Event::Result(result) => {
                if let Busy::Running(begin) = std::mem::replace(&mut self.busy, Busy::Idle)
                    && begin.id == result.id
                {
                    self.finish(&begin, outcome_of(result));
                }
            }
            Event::Done => return true,
        }
        false
    }
}

/// The outcome a result event reports.
fn outcome_of(result: ResultEvent) -> Outcome {
    if let Some(error) = result.error {
        return Outcome::Failed(error);
    }
    let Some(ours) = stats::timing(&result.ours_ms) else {
        return Outcome::Failed(vec!["no time was measured".to_owned()]);
    };
    Outcome::Timed(Box::new(Measured {
        shape: result.shape,
        dtype: result.dtype,
        matches: result.r#match,
        max_abs_diff: result.max_abs_diff,
        ours,
        reference: result.reference_ms.as_deref().and_then(stats::timing),
        candidate: result.candidate_ms.as_deref().and_then(stats::timing),
        rounds: result.rounds.unwrap_or(1),
        leaked_bytes: result.leaked_bytes,
        peak: result.peak_bytes,
    }))
}

/// One interpreter: sends the request, applies events as they come, ends the
/// interpreter when nothing comes within the time limit.
fn run_once(
    options: &Options<'_>,
    targets: &[Target],
    state: &mut State,
) -> Result<Ending, BenchmarkError> {
    let failed = |reason: String| BenchmarkError {
        python: options.python.to_owned(),
        reason,
    };
    let request = Request {
        driver: DRIVER,
        iterations: options.iterations,
        warmup: options.warmup,
        budget_s: options.budget.as_secs_f64(),
        skip: &state.skip,
        kernels: targets,
    };
    let request = serde_json::to_vec(&request).map_err(|err| failed(err.to_string()))?;
    state.started_here = false;
    let mut child = spawn(options).map_err(|err| failed(err.to_string()))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A driver that died before reading is reported from its exit.
        let _ = stdin.write_all(&request);
    }
    let lines = read_lines(child.stdout.take());
    let stderr = read_tail(child.stderr.take());
    let ending = loop {
        // Starting the interpreter (torch's import) is no workload's time.
        let wait = if state.started_here {
            options.time_limit
        } else {
            options.time_limit.max(STARTUP_LIMIT)
        };
        match lines.recv_timeout(wait) {
            Ok(line) => {
                let event = line
                    .strip_prefix(MARK)
                    .and_then(|j| serde_json::from_str(j).ok());
                if let Some(event) = event
                    && state.apply(event)
                {
                    break Ending::Done;
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                break Ending::Hung;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = child.wait().map_err(|err| failed(err.to_string()))?;
                let tail = stderr.recv().unwrap_or_default();
                break Ending::Exited(status.to_string(), tail);
            }
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    if !state.started {
        let detail = match &ending {
            Ending::Exited(status, tail) => {
                format!(
                    "{status}: {}",
                    tail.last().map_or("no output", String::as_str)
                )
            }
            _ => format!("no answer within {}s", options.time_limit.as_secs()),
        };
        return Err(failed(detail));
    }
    Ok(ending)
}

/// Starts the driver offline, with the cache variables set to the verified
/// cache (`HF_KERNELS_CACHE`, which old runtimes prefer, removed).
fn spawn(options: &Options<'_>) -> std::io::Result<Child> {
    Command::new(options.python)
        .arg("-c")
        .arg(DRIVER)
        .env("HF_HUB_OFFLINE", "1")
        .env("KERNELS_CACHE", options.cache_dir)
        .env("HF_HUB_CACHE", options.cache_dir)
        .env("PYTHONUNBUFFERED", "1")
        .env_remove("HF_KERNELS_CACHE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
}

/// The lines of `stdout` as they come, on a channel that closes at its end.
fn read_lines(stdout: Option<impl Read + Send + 'static>) -> mpsc::Receiver<String> {
    let (send, receive) = mpsc::channel();
    if let Some(stdout) = stdout {
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
    }
    receive
}

/// The last lines of `stderr`, sent once it closes.
fn read_tail(stderr: Option<impl Read + Send + 'static>) -> mpsc::Receiver<Vec<String>> {
    let (send, receive) = mpsc::channel();
    if let Some(stderr) = stderr {
        std::thread::spawn(move || {
            let mut tail = std::collections::VecDeque::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tail.len() == STDERR_TAIL {
                    tail.pop_front();
                }
                tail.push_back(line);
            }
            let _ = send.send(tail.into_iter().collect());
        });
    }
    receive
}
