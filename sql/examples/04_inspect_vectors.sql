-- Per-tuple property vectors (EDBT 2009): who is protected how much. A worst-case k hides the
-- spread: look at the distribution of class sizes and at the tuples whose sensitive value is most
-- exposed within their class.
SELECT p_equiv AS class_size, count(*) AS tuples
FROM pbg_vectors('adult', '2,1,1,1,0,1,2,1')
GROUP BY p_equiv ORDER BY p_equiv LIMIT 10;

-- Average class size (S_k / N) and average GLM loss per tuple.
SELECT round(avg(p_equiv), 2) AS average_class_size, round(avg(p_glm), 4) AS average_glm
FROM pbg_vectors('adult', '2,1,1,1,0,1,2,1');

-- Rows in classes of size 1, with their row ids collected in a roaring bitmap.
SELECT bitmap_cardinality(class_bitmap(row_id)) AS unique_tuples,
       bitmap_contains(class_bitmap(row_id), 0) AS row_0_is_unique
FROM pbg_vectors('adult', '2,1,1,1,0,1,2,1')
WHERE p_equiv = 1;

-- Compare two nodes tuple by tuple.
SELECT * FROM pbg_compare('adult', '2,1,1,1,0,1,2,1', '3,1,1,1,0,1,2,1', 'equiv');
