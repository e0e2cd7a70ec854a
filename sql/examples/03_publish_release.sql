-- Publish a release to Parquet: the ETL use. QIs are replaced by their labels at the node's levels,
-- suppressed rows are removed. The file lands in out/ (created if missing).
COPY (SELECT * FROM pbg_anonymize('adult', '4,2,2,2,1,1,3,1'))
TO 'out/adult-release.parquet' STORED AS PARQUET;

-- Read it back as an external table and check k and l from the published file alone.
CREATE EXTERNAL TABLE release STORED AS PARQUET LOCATION 'out/adult-release.parquet';

SELECT count(*) AS classes, min(n) AS k, min(l) AS l_distinct, sum(n) AS rows_released
FROM (
  SELECT count(*) AS n, count(DISTINCT occupation) AS l
  FROM release
  GROUP BY age, workclass, education, "marital-status", race, sex, "native-country", "salary-class"
);
