-- Evaluate one lattice node of adult by hand with GROUP BY over generalized columns, then compare
-- with pbg_evaluate. Run: cargo run -- sql datasets/adult/adult.toml -f sql/examples/01_evaluate_node.sql
-- The profile registers the table `adult` and the hierarchies under the QI names.

-- Equivalence classes of node (4,2,2,2,1,1,3,1): size, distinct sensitive values, entropy l.
SELECT count(*)                       AS classes,
       min(n)                         AS k_before_suppression,
       min(l)                         AS l_distinct_before_suppression,
       round(min(el), 4)              AS l_entropy_before_suppression
FROM (
  SELECT count(*) AS n, count(DISTINCT occupation) AS l, entropy_l(occupation) AS el
  FROM adult
  GROUP BY generalize(age, 'age', 4), generalize(workclass, 'workclass', 2),
           generalize(education, 'education', 2), generalize("marital-status", 'marital-status', 2),
           generalize(race, 'race', 1), generalize(sex, 'sex', 1),
           generalize("native-country", 'native-country', 3), generalize("salary-class", 'salary-class', 1)
);

-- The same node through the engine, with the DBSEC suppression rule (eta = 301 rows):
-- classes smaller than k are suppressed, so k and l are over the released classes.
SELECT classes, k, l_distinct, round(l_entropy, 4) AS l_entropy, suppressed, round(glm, 1) AS glm
FROM pbg_evaluate('adult', '4,2,2,2,1,1,3,1');
