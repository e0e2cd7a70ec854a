//! DataFusion's Arrow IPC format with its writes guarded. Its sink is private, so the
//! [`super::GuardedWrites`] rule cannot find a write's target in the plan; this format, which
//! replaces DataFusion's `arrow` format in pbg's local sessions, puts a [`GuardedWriteExec`] above
//! each write it plans, while it still holds the target. Reading is DataFusion's, unchanged.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::{GetExt, Result, Statistics};
use datafusion::datasource::file_format::arrow::{ArrowFormat, ArrowFormatFactory};
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::{FileFormat, FileFormatFactory};
use datafusion::datasource::physical_plan::{FileScanConfig, FileSinkConfig, FileSource};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::physical_expr::LexRequirement;
use datafusion::physical_plan::ExecutionPlan;
use object_store::{ObjectMeta, ObjectStore};

use super::guarded_write::GuardedWriteExec;
use super::restore::Target;

/// Makes [`GuardedArrowFormat`]s: registered under DataFusion's `arrow` extension, it is the
/// format of `STORED AS ARROW` (`COPY`, `CREATE EXTERNAL TABLE`, then `INSERT INTO`).
#[derive(Debug, Default)]
pub struct GuardedArrowFormatFactory;

impl FileFormatFactory for GuardedArrowFormatFactory {
    fn create(
        &self,
        state: &dyn Session,
        format_options: &HashMap<String, String>,
    ) -> Result<Arc<dyn FileFormat>> {
        // DataFusion's factory first, so that its checks of the options stay its own.
        ArrowFormatFactory::new().create(state, format_options)?;
        Ok(Arc::new(GuardedArrowFormat::default()))
    }

    fn default(&self) -> Arc<dyn FileFormat> {
        Arc::new(GuardedArrowFormat::default())
    }
}

impl GetExt for GuardedArrowFormatFactory {
    fn get_ext(&self) -> String {
        ArrowFormatFactory::new().get_ext()
    }
}

/// DataFusion's [`ArrowFormat`], each local write of which leaves its target as it was unless
/// it succeeds.
#[derive(Debug, Default)]
pub struct GuardedArrowFormat {
    inner: ArrowFormat,
}

#[async_trait]
impl FileFormat for GuardedArrowFormat {
    fn get_ext(&self) -> String {
        self.inner.get_ext()
    }

    fn get_ext_with_compression(&self, compression: &FileCompressionType) -> Result<String> {
        self.inner.get_ext_with_compression(compression)
    }

    fn compression_type(&self) -> Option<FileCompressionType> {
        self.inner.compression_type()
    }

    async fn infer_schema(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        objects: &[ObjectMeta],
    ) -> Result<SchemaRef> {
        self.inner.infer_schema(state, store, objects).await
    }

    async fn infer_stats(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        table_schema: SchemaRef,
        object: &ObjectMeta,
    ) -> Result<Statistics> {
        self.inner
            .infer_stats(state, store, table_schema, object)
            .await
    }

    async fn create_physical_plan(
        &self,
        state: &dyn Session,
        conf: FileScanConfig,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.inner.create_physical_plan(state, conf).await
    }

    async fn create_writer_physical_plan(
        &self,
        input: Arc<dyn ExecutionPlan>,
        state: &dyn Session,
        conf: FileSinkConfig,
        order_requirements: Option<LexRequirement>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let target = Target::of_config(&conf);
        let write = self
            .inner
            .create_writer_physical_plan(input, state, conf, order_requirements)
            .await?;
        Ok(match target {
            Some(target) => Arc::new(GuardedWriteExec::new(write, target)),
            None => write,
        })
    }

    fn file_source(&self, table_schema: TableSchema) -> Arc<dyn FileSource> {
        self.inner.file_source(table_schema)
    }
}
