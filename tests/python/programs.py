"""Small programs shared by the Python tests: a matmul, its split-K tiled form,
and a form that differs from it."""

NAIVE = """
(program mm
  (dims (m 3) (k 5) (n 2))
  (input a f32 [m k])
  (input b f32 [k n])
  (output c [m n] (matmul k a b)))
"""

# k split into blocks on axis k.0; each block's product is a partial(+) sum.
TILED = """
(program mm
  (dims (m 3) (k 5) (n 2))
  (input a f32 [m k])
  (input b f32 [k n])
  (let p (tile_matmul k (partition k.0 k a) (partition k.0 k b)))
  (output c [m n] (preduce k.0 + p)))
"""

# Not the same function: twice the product.
WRONG = """
(program mm
  (dims (m 3) (k 5) (n 2))
  (input a f32 [m k])
  (input b f32 [k n])
  (output c [m n] (mul (matmul k a b) 2)))
"""

# Same ops, but k has another extent: not comparable with NAIVE.
OTHER_EXTENT = NAIVE.replace("(k 5)", "(k 6)")
