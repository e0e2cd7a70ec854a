-- The minimal PBGs (Pareto front) of adult for k-anonymity against GLM loss: exactly, and with
-- PBG-EA (seeded: same seed, same front). Then pick the least-loss node with k >= 100.
SELECT * FROM pbg_search('adult', 'k,glm', 'exhaustive') ORDER BY k;

SELECT count(*) AS archive_size FROM pbg_search('adult', 'k,glm', 'ea', 42);

SELECT * FROM pbg_search('adult', 'k,l,glm', 'exhaustive') WHERE k >= 100 ORDER BY glm LIMIT 1;

-- The whole lattice is a table too: the best nodes under a policy.
SELECT age, workclass, education, "marital-status", race, sex, "native-country", "salary-class",
       k, l_distinct, round(glm, 1) AS glm
FROM pbg_lattice('adult')
WHERE k >= 50 AND l_distinct >= 5
ORDER BY glm
LIMIT 3;
