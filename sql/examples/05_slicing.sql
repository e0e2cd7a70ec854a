-- Slicing from SQL: which attributes are correlated (chi-square, phi-squared), then a 5-diverse
-- slicing of adult (QIs in chi_matrix pairs, occupation in a column of its own) and the sizes of
-- its buckets. Inside each bucket every column is permuted with the seed.
SELECT a, b, round(phi_squared, 4) AS phi2
FROM pbg_correlation('adult')
ORDER BY phi_squared DESC
LIMIT 5;

SELECT count(*) AS buckets, min(n) AS smallest, max(n) AS largest
FROM (SELECT bucket, count(*) AS n FROM pbg_slice('adult', 5, 'slicing', 1) GROUP BY bucket);
