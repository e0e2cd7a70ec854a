//! The cluster face: pbg on Apache DataFusion Ballista. A scheduler and executors that know
//! every pbg function and codec ([`run_scheduler`], [`run_executor`]), and client sessions whose
//! row passes run on them ([`connect`], [`standalone`]). Only the row passes distribute — pass 1
//! as a `GROUP BY` whose result is the small class statistics, pass 2 as the release plan the
//! executors write, and the verifier's reads; the lattice search runs on the client.

mod codec;
pub mod logging;

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ballista::prelude::SessionContextExt;
use ballista_core::extension::SessionConfigExt;
use ballista_core::registry::BallistaFunctionRegistry;
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::session_state::SessionState;
use datafusion::prelude::{SessionConfig, SessionContext};

pub use codec::{PbgLogicalCodec, PbgPhysicalCodec};

use crate::error::{PbgError, Result};
use crate::input::{self, Distributed};

/// A scheduler address `df://HOST:PORT`, checked and resolved.
#[derive(Debug, Clone)]
pub struct SchedulerUrl {
    /// As given.
    pub url: String,
    /// Host name or address.
    pub host: String,
    /// Port.
    pub port: u16,
}

impl SchedulerUrl {
    /// Parses `df://HOST:PORT`.
    pub fn parse(url: &str) -> Result<Self> {
        let bad = |why: &str| {
            PbgError::argument(
                "cluster",
                format!("`{url}` is not a scheduler address: {why} (expected df://HOST:PORT)"),
            )
        };
        let rest = url
            .strip_prefix("df://")
            .ok_or_else(|| bad("it does not start with df://"))?;
        let rest = rest.trim_end_matches('/');
        let (host, port) = rest
            .rsplit_once(':')
            .ok_or_else(|| bad("it names no port"))?;
        if host.is_empty() {
            return Err(bad("it names no host"));
        }
        let port: u16 = port.parse().map_err(|_| bad("the port is not a number"))?;
        Ok(SchedulerUrl {
            url: url.to_string(),
            host: host.to_string(),
            port,
        })
    }

    fn socket(&self) -> Result<SocketAddr> {
        (self.host.as_str(), self.port)
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| {
                PbgError::argument(
                    "cluster",
                    format!("cannot resolve the scheduler host `{}`", self.host),
                )
            })
    }
}

/// The configuration pbg's client sessions run with on a cluster: pbg's own settings (see
/// [`input::session_config`]), Ballista's, pbg's codecs, and the [`Distributed`] mark.
pub fn client_config(scheduler: &str) -> SessionConfig {
    input::session_config()
        .with_information_schema(true)
        .upgrade_for_ballista()
        .with_ballista_logical_extension_codec(Arc::new(PbgLogicalCodec::default()))
        .with_ballista_physical_extension_codec(Arc::new(PbgPhysicalCodec::default()))
        // Ballista's static planner: with its adaptive one (on by default in 55), an executor
        // lost while a stage's tasks ran left the job waiting for good ("Can't find active
        // stage to update stage outputs" in the scheduler's log); the static one reruns the
        // lost tasks.
        .with_ballista_adaptive_query_planner(false)
        .with_extension(Arc::new(Distributed {
            scheduler: scheduler.to_string(),
        }))
}

/// A session state of `config` on pbg's runtime (its local files read through pbg's store).
fn base_state(config: SessionConfig) -> SessionState {
    input::state_builder(config).build()
}

/// A session whose plans run on the scheduler at `url` (`df://HOST:PORT`); register pbg's SQL
/// functions on it with [`crate::sql::register`] to use them. Fails at once, with the address,
/// when nothing answers there.
pub fn connect(url: &str) -> Result<SessionContext> {
    let scheduler = SchedulerUrl::parse(url)?;
    let addr = scheduler.socket()?;
    std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)).map_err(|e| {
        PbgError::argument(
            "cluster",
            format!(
                "no scheduler answers at {url} ({e}); start one with `pbg cluster scheduler --bind {}:{}`",
                scheduler.host, scheduler.port
            ),
        )
    })?;
    probe(&scheduler)?;
    let state = base_state(client_config(url));
    let ctx = input::block_on(SessionContext::remote_with_state(url, state))?
        .map_err(|e| PbgError::argument("cluster", format!("{url}: {e}")))?;
    Ok(ctx)
}

/// Asks the service at `scheduler` for a job's status: a Ballista scheduler answers (the job is
/// unknown), anything else (an executor's port, another server) does not, within 5 s.
fn probe(scheduler: &SchedulerUrl) -> Result<()> {
    use ballista_core::serde::protobuf::GetJobStatusParams;
    use ballista_core::serde::protobuf::scheduler_grpc_client::SchedulerGrpcClient;

    let endpoint = format!("http://{}:{}", scheduler.host, scheduler.port);
    let not_a_scheduler = |why: String| {
        PbgError::argument(
            "cluster",
            format!(
                "{} does not answer as a Ballista scheduler ({why}); is it the scheduler's port (`pbg cluster scheduler --bind`)?",
                scheduler.url
            ),
        )
    };
    let answer = input::block_on(async move {
        tokio::time::timeout(Duration::from_secs(5), async move {
            let mut client = SchedulerGrpcClient::connect(endpoint)
                .await
                .map_err(|e| e.to_string())?;
            let status = client
                .get_job_status(GetJobStatusParams {
                    job_id: "pbg-probe".into(),
                })
                .await;
            match status {
                Ok(_) => Ok(()),
                Err(s) if s.code() == tonic::Code::Unimplemented => Err(format!(
                    "it does not know the scheduler's calls: {}",
                    s.message()
                )),
                // A scheduler may refuse an unknown job: it answered.
                Err(s) if s.code() != tonic::Code::Unavailable => Ok(()),
                Err(s) => Err(s.to_string()),
            }
        })
        .await
    })?;
    match answer {
        Ok(Ok(())) => Ok(()),
        Ok(Err(why)) => Err(not_a_scheduler(why)),
        Err(_) => Err(not_a_scheduler("no answer within 5 s".into())),
    }
}

/// Fails, naming the flag and the address, when `addr` cannot be bound now (so that a role does
/// not start half-way and then stop on a port in use).
fn check_free(flag: &str, addr: SocketAddr) -> Result<()> {
    std::net::TcpListener::bind(addr)
        .map(drop)
        .map_err(|e| PbgError::argument(flag, format!("cannot listen on {addr}: {e}")))
}

/// A session on an in-process cluster (a scheduler and one executor on random local ports) that
/// knows pbg's functions and codecs: the cluster path, tested without separate processes.
pub fn standalone() -> Result<SessionContext> {
    let config = client_config("standalone").with_ballista_standalone_parallelism(2);
    let state = base_state(config);
    // The in-process scheduler and executor resolve functions from this state.
    let ctx = SessionContext::new_with_state(state);
    register_functions(&ctx);
    let ctx = input::block_on(SessionContext::standalone_with_state(ctx.state()))?
        .map_err(|e| PbgError::argument("cluster", format!("standalone cluster: {e}")))?;
    Ok(ctx)
}

/// Registers pbg's scalar and aggregate functions (not its table functions, which run on the
/// client) on `ctx`.
fn register_functions(ctx: &SessionContext) {
    let (scalars, aggregates) = crate::sql::row_functions();
    for f in scalars {
        ctx.register_udf(f.as_ref().clone());
    }
    for f in aggregates {
        ctx.register_udaf(f.as_ref().clone());
    }
}

/// The session state schedulers plan with: Ballista's defaults plus pbg's functions, on pbg's
/// runtime (a scheduler infers the schema of a table over a named pipe: it must not open it).
fn scheduler_session(config: SessionConfig) -> datafusion::common::Result<SessionState> {
    let state = SessionStateBuilder::new_from_existing(
        ballista_core::utils::default_session_builder(config)?,
    )
    .with_runtime_env(input::runtime_env(None)?)
    .build();
    let ctx = SessionContext::new_with_state(state);
    register_functions(&ctx);
    Ok(ctx.state())
}

fn role_config() -> SessionConfig {
    input::session_config()
        .upgrade_for_ballista()
        .with_ballista_logical_extension_codec(Arc::new(PbgLogicalCodec::default()))
        .with_ballista_physical_extension_codec(Arc::new(PbgPhysicalCodec::default()))
}

/// Options of `pbg cluster scheduler`.
#[derive(Debug, Clone)]
pub struct SchedulerOptions {
    /// Address to listen on.
    pub bind: SocketAddr,
    /// Seconds without a heartbeat after which an executor is taken for dead.
    pub executor_timeout_s: u64,
}

/// Runs a Ballista scheduler that knows pbg's functions and codecs, until the process ends.
pub fn run_scheduler(options: &SchedulerOptions) -> Result<()> {
    use ballista_scheduler::cluster::BallistaCluster;
    use ballista_scheduler::config::SchedulerConfig;

    let mut config = SchedulerConfig {
        bind_host: options.bind.ip().to_string(),
        external_host: options.bind.ip().to_string(),
        bind_port: options.bind.port(),
        executor_timeout_seconds: options.executor_timeout_s,
        no_executors_grace_period_seconds: options.executor_timeout_s,
        expire_dead_executor_interval_seconds: (options.executor_timeout_s / 3).clamp(1, 15),
        ..SchedulerConfig::default()
    };
    config.override_logical_codec = Some(Arc::new(PbgLogicalCodec::default()));
    config.override_physical_codec = Some(Arc::new(PbgPhysicalCodec::default()));
    config.override_session_builder = Some(Arc::new(scheduler_session));
    config.override_config_producer = Some(Arc::new(role_config));
    let bind = options.bind;
    check_free("bind", bind)?;
    let fail = |e: ballista_core::error::BallistaError| {
        PbgError::argument("cluster scheduler", format!("{bind}: {e}"))
    };
    input::block_on(async move {
        let cluster = BallistaCluster::new_from_config(&config).await?;
        ballista_scheduler::scheduler_process::start_server(cluster, bind, Arc::new(config)).await
    })?
    .map_err(fail)
}

/// Options of `pbg cluster executor`.
#[derive(Debug, Clone)]
pub struct ExecutorOptions {
    /// The scheduler to register with.
    pub scheduler: SchedulerUrl,
    /// Address for the data (Arrow Flight) service; the task service listens on `grpc_port`.
    pub bind: SocketAddr,
    /// Port of the task (gRPC) service.
    pub grpc_port: u16,
    /// Where shuffle files go.
    pub work_dir: Option<PathBuf>,
    /// Tasks run at once.
    pub concurrent_tasks: usize,
    /// Seconds between heartbeats to the scheduler.
    pub heartbeat_s: u64,
}

/// Runs a Ballista executor that knows pbg's functions and codecs, until the process ends.
pub fn run_executor(options: &ExecutorOptions) -> Result<()> {
    use ballista_executor::executor_process::{ExecutorProcessConfig, start_executor_process};

    let registry = {
        let ctx = SessionContext::new_with_state(base_state(role_config()));
        register_functions(&ctx);
        BallistaFunctionRegistry::from(&ctx.state())
    };
    check_free("bind", options.bind)?;
    check_free(
        "grpc-port",
        SocketAddr::new(options.bind.ip(), options.grpc_port),
    )?;
    if let Some(dir) = &options.work_dir {
        std::fs::create_dir_all(dir).map_err(|e| PbgError::io(dir, e))?;
    }
    let work_dir = options.work_dir.clone();
    let config = ExecutorProcessConfig {
        bind_host: options.bind.ip().to_string(),
        external_host: Some(options.bind.ip().to_string()),
        port: options.bind.port(),
        grpc_port: options.grpc_port,
        scheduler_host: options.scheduler.host.clone(),
        scheduler_port: options.scheduler.port,
        scheduler_connect_timeout_seconds: 30,
        vcores: options.concurrent_tasks.max(1),
        work_dir: options
            .work_dir
            .as_ref()
            .map(|d| d.to_string_lossy().into_owned()),
        executor_heartbeat_interval_seconds: options.heartbeat_s.max(1),
        override_function_registry: Some(Arc::new(registry)),
        override_logical_codec: Some(Arc::new(PbgLogicalCodec::default())),
        override_physical_codec: Some(Arc::new(PbgPhysicalCodec::default())),
        override_config_producer: Some(Arc::new(role_config)),
        // Tasks read local files through pbg's store, which refuses a named pipe or a device
        // (DataFusion's waited for a writer) and spills where Ballista's own runtime would.
        override_runtime_producer: Some(Arc::new(move |_: &SessionConfig| {
            input::runtime_env(work_dir.as_deref())
        })),
        ..ExecutorProcessConfig::default()
    };
    let bind = options.bind;
    input::block_on(async move { start_executor_process(Arc::new(config)).await })?
        .map_err(|e| PbgError::argument("cluster executor", format!("{bind}: {e}")))
}
