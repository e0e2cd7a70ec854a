//! `pbg cluster scheduler|executor`: the Ballista roles, in the pbg binary so that every plan
//! using pbg's functions and codecs runs on them.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use clap::{Args, Subcommand};
use pbg::PbgError;
use pbg::cluster::{self, ExecutorOptions, SchedulerOptions, SchedulerUrl};

/// The cluster roles.
#[derive(Subcommand, Debug)]
pub enum ClusterCommand {
    /// Run a Ballista scheduler that knows pbg's functions (clients connect with --cluster df://HOST:PORT).
    Scheduler(SchedulerArgs),
    /// Run a Ballista executor that knows pbg's functions, registered with a scheduler.
    Executor(ExecutorArgs),
}

/// Where a role logs.
#[derive(Args, Debug)]
pub struct LogArgs {
    /// Log level: error, warn, info, debug, trace or off.
    #[arg(long, default_value = "info", value_name = "LEVEL")]
    log_level: String,
    /// Append the log to this file instead of standard error.
    #[arg(long, value_name = "FILE")]
    log_file: Option<PathBuf>,
}

/// `pbg cluster scheduler`.
#[derive(Args, Debug)]
pub struct SchedulerArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:50050", value_name = "HOST:PORT")]
    bind: String,
    /// Seconds without a heartbeat after which an executor is taken for dead (its tasks rerun
    /// elsewhere).
    #[arg(long, default_value_t = 180, value_name = "SECONDS")]
    executor_timeout: u64,
    #[command(flatten)]
    log: LogArgs,
}

/// `pbg cluster executor`.
#[derive(Args, Debug)]
pub struct ExecutorArgs {
    /// The scheduler: HOST:PORT or df://HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    scheduler: String,
    /// Address of the data (Arrow Flight) service; the task service listens on --grpc-port.
    #[arg(long, default_value = "127.0.0.1:50051", value_name = "HOST:PORT")]
    bind: String,
    /// Port of the task (gRPC) service [default: the --bind port + 1].
    #[arg(long, value_name = "PORT")]
    grpc_port: Option<u16>,
    /// Directory for shuffle files [default: a temporary directory].
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
    /// Tasks run at once [default: the number of cores].
    #[arg(long, value_name = "N")]
    concurrent_tasks: Option<usize>,
    /// Seconds between heartbeats to the scheduler.
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    heartbeat: u64,
    #[command(flatten)]
    log: LogArgs,
}

fn address(flag: &str, text: &str) -> Result<SocketAddr, PbgError> {
    text.to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| PbgError::argument(flag, format!("`{text}` is not HOST:PORT")))
}

/// Runs a cluster role until the process is stopped.
pub fn run(c: ClusterCommand) -> anyhow::Result<()> {
    match c {
        ClusterCommand::Scheduler(a) => {
            cluster::logging::init(&a.log.log_level, a.log.log_file.as_deref())?;
            let bind = address("bind", &a.bind)?;
            eprintln!("pbg cluster scheduler: starting on df://{bind}");
            cluster::run_scheduler(&SchedulerOptions {
                bind,
                executor_timeout_s: a.executor_timeout.max(1),
            })?;
        }
        ClusterCommand::Executor(a) => {
            cluster::logging::init(&a.log.log_level, a.log.log_file.as_deref())?;
            let bind = address("bind", &a.bind)?;
            let url = if a.scheduler.starts_with("df://") {
                a.scheduler.clone()
            } else {
                format!("df://{}", a.scheduler)
            };
            let scheduler = SchedulerUrl::parse(&url).map_err(|e| e.for_argument("scheduler"))?;
            let grpc_port = match a.grpc_port {
                Some(p) => p,
                None => bind.port().checked_add(1).ok_or_else(|| {
                    PbgError::argument("bind", "port 65535 leaves no port for --grpc-port")
                })?,
            };
            let concurrent_tasks = a
                .concurrent_tasks
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            eprintln!(
                "pbg cluster executor: data on {bind}, tasks on port {grpc_port}, scheduler {url}"
            );
            cluster::run_executor(&ExecutorOptions {
                scheduler,
                bind,
                grpc_port,
                work_dir: a.work_dir,
                concurrent_tasks,
                heartbeat_s: a.heartbeat,
            })?;
        }
    }
    Ok(())
}
