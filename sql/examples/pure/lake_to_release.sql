-- A whole anonymization job in SQL, with no profile on the command line:
--   pbg sql -f sql/examples/pure/lake_to_release.sql        (from the repository root)
-- It writes under out/pure-sql/ (COPY adds files to a directory: remove it before a rerun).

-- 1. A lake: the adult data as a directory of Parquet files, registered as a table.
CREATE EXTERNAL TABLE adult_csv STORED AS CSV LOCATION 'datasets/adult/adult.csv'
OPTIONS ('format.delimiter' ';', 'format.has_header' 'true');
COPY adult_csv TO 'out/pure-sql/lake/' STORED AS PARQUET;
CREATE EXTERNAL TABLE people STORED AS PARQUET LOCATION 'out/pure-sql/lake/';

-- 2. Declare a profile over the registered table (nothing is read yet).
SELECT * FROM pbg_profile('people', '
table = "people"
sensitive = "occupation"
suppression_limit = "1%"

[[qi]]
name = "age"
hierarchy = "datasets/adult/arx-hierarchies/adult_hierarchy_age.csv"
[[qi]]
name = "workclass"
hierarchy = "datasets/adult/arx-hierarchies/adult_hierarchy_workclass.csv"
[[qi]]
name = "education"
hierarchy = "datasets/adult/arx-hierarchies/adult_hierarchy_education.csv"
[[qi]]
name = "marital-status"
hierarchy = "datasets/adult/arx-hierarchies/adult_hierarchy_marital-status.csv"
[[qi]]
name = "race"
hierarchy = "datasets/adult/arx-hierarchies/adult_hierarchy_race.csv"
[[qi]]
name = "sex"
hierarchy = "datasets/adult/arx-hierarchies/adult_hierarchy_sex.csv"
[[qi]]
name = "native-country"
hierarchy = "datasets/adult/arx-hierarchies/adult_hierarchy_native-country.csv"
[[qi]]
name = "salary-class"
hierarchy = "datasets/adult/arx-hierarchies/adult_hierarchy_salary-class.csv"
');

-- 3. The minimal property based generalizations for k, l and GLM (first few by GLM).
SELECT * FROM pbg_search('people', 'k,l,glm', 'exhaustive') ORDER BY glm LIMIT 5;

-- 4. Anonymize: the node with the least GLM among those with k >= 10 and l >= 3, written as
--    Parquet partitioned by the sensitive attribute.
COPY (SELECT * FROM pbg_anonymize('people', 'pick', 'k>=10,l>=3', 'glm'))
TO 'out/pure-sql/release/' STORED AS PARQUET PARTITIONED BY (occupation);

-- 5. Verify what was written against the input, with the same verifier as the CLI.
SELECT node, rows_in, rows_released, suppressed, classes, k, l, verified
FROM pbg_verify('people', 'out/pure-sql/release/', 'k>=10,l>=3');
