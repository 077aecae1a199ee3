-- TPC-H Q17 with the substitution parameters BRAND = Brand#44, CONTAINER = WRAP CASE (the
-- validation ones, Brand#23 and MED BOX, match no row at scale factor 0.01).
select sum(l_extendedprice) / 7.0 as avg_yearly
from lineitem, part
where p_partkey = l_partkey and p_brand = 'Brand#44' and p_container = 'WRAP CASE'
  and l_quantity < (select 0.2 * avg(l_quantity) from lineitem where l_partkey = p_partkey)
