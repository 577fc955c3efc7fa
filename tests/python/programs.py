"""Small programs shared by the Python tests: a matmul, its split-K tiled form,
and a form that differs from it; a program of independent kernels."""

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


# Two launch levels of two independent kernels each: a (grid n.0 x m.0)
# beside b (grid n.0), then y (grid m.0), which reads both, beside z.
TWO_LEVELS = """(program three (dims (m 6) (k 20) (n 12))
  (input x f32 [m k]) (input w1 f32 [k n]) (input w2 f32 [k n])
  (let a (combine m.0 m (combine n.0 n (tile_matmul k (partition m.0 m (replicate n.0 x))
                                                      (partition n.0 n (replicate m.0 w1))))))
  (let b (combine n.0 n (tile_matmul k (replicate n.0 x) (partition n.0 n w2))))
  (output y [m n] (combine m.0 m (mul (partition m.0 m a) (partition m.0 m b))))
  (output z [n] (combine n.0 n (sum m (partition n.0 n b)))))"""
