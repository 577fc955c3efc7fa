// One @triton.jit function per kernel: program ids of the grid axes, offsets
// and masks per tile dim, loads, the scheduled nodes, loops with their running
// state, stores. The statements of a scope are built first (offsets and masks
// land in the prologue of the outermost scope that has their coordinates),
// then written with the code writer.
#include <algorithm>
#include <cmath>
#include <limits>

#include "codegen/region_text.h"
#include "codegen/triton_emit.h"
#include "eqiforge/ir/parse.h"

namespace eqf::codegen {
namespace {

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

void render(const StmtBlock& b, CodeWriter& w) {
  for (const std::string& line : b.prologue) w.line(line);
  for (const StmtBlock::Stmt& s : b.body) {
    w.line(s.text);
    if (s.nested) {
      auto body = w.indent();
      render(*s.nested, w);
    }
  }
}

// "m_blk" -> "m": the running state of a block value is named after it.
std::string state_name(std::string name) {
  for (std::string suffix : {"_blk", "_block", "_tile", "_partial", "_part"})
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return name.substr(0, name.size() - suffix.size());
  return name;
}

bool is_fixed_one(const Program& p, Symbol d) {
  const DimInfo* info = p.dims.find(d);
  return info && !info->collected_from && info->extent == 1;
}

// Items joined by ", " into lines of at most `width` characters, each ending with ",".
std::vector<std::string> wrap(const std::vector<std::string>& items, size_t width = 92) {
  std::vector<std::string> lines;
  std::string line;
  for (const std::string& item : items) {
    if (!line.empty() && line.size() + item.size() + 3 > width) {
      lines.push_back(line + ",");
      line.clear();
    }
    line += (line.empty() ? "" : ", ") + item;
  }
  if (!line.empty()) lines.push_back(line + ",");
  return lines;
}

std::string paren(const Expr& e, int prec) { return e.prec >= prec ? e.text : "(" + e.text + ")"; }

}  // namespace

// ptr + sum of index * stride over the buffer's dims; an index "0" adds nothing.
std::string KernelEmitter::address(int b, const Buffer& buf, const std::map<Symbol, Expr>& idx, NodeId at) {
  std::vector<std::string> terms{names_.ptr(b)};
  for (Symbol d : buf.layout) {
    auto it = idx.find(d);
    if (it == idx.end())
      fail(at, "access to " + buf.name + ": no index for its dim " + std::string(d.str()) + " (a bug)");
    if (it->second.text == "0") continue;
    terms.push_back(paren(it->second, kProduct) + " * " + stride(b, d));
  }
  return join(terms, " + ");
}

KernelEmitter::KernelEmitter(const Program& p, const LoweredProgram& lp, int kernel, const ModuleNames& names,
                             const NameTable* reserved)
    : p_(p), lp_(lp), kernel_(lp.kernels.at(size_t(kernel))), names_(names) {
  if (reserved) locals_ = *reserved;
  blocks_[-1] = &top_;
  // Parameter names are claimed first so that let names never shadow them.
  for (size_t b = 0; b < lp.buffers.size(); ++b) {
    locals_.claim(names.ptr(int(b)));
    for (Symbol d : lp.buffers[b].layout) locals_.claim(names.stride(int(b), d));
  }
  for (const DimInfo& d : p.dims.all()) {
    locals_.claim(names_.extent(d.name));
    locals_.claim(names_.tile(DimView{d.name, 0, false}));
  }
  for (Axis a : lp.axes) {
    locals_.claim(names_.block(a));
    locals_.claim(names_.even(a));
    locals_.claim(names_.tile(DimView{a.dim, a.level + 1, false}));
  }
  locals_.claim("INPUT_PRECISION");

  // Uses of every node (for inlining) and the depths each dim appears at.
  std::map<uint32_t, std::set<int>> depths;
  auto note_views = [&](NodeId n) {
    for (const TensorType& t : p_.type(n).get().parts)
      for (const DimView& v : all_views(t)) depths[v.dim.raw()].insert(v.depth);
  };
  auto use = [&](NodeId c, int scope, NodeId user) {
    uses_[c.v] += 1;
    use_scope_[c.v] = scope;
    user_[c.v] = user;
  };
  auto scan = [&](auto&& self, const Block& b, int scope) -> void {
    for (const Item& it : b.items) {
      note_views(it.node);
      if (it.kind == Item::Kind::Compute) {
        for (NodeId c : p_.children(it.node)) use(c, scope, it.node);
      } else if (it.kind == Item::Kind::Loop) {
        use(p_.children(it.node)[0], it.index, it.node);
        self(self, kernel_.loops[size_t(it.index)].body, it.index);
      }
    }
  };
  scan(scan, kernel_.body, -1);
  for (const Store& s : kernel_.stores) {
    use(s.value, -1, NodeId{});
    note_views(s.value);
  }
  for (const auto& [dim, ds] : depths)
    if (ds.size() > 1)
      for (int d : ds) multi_depth_.insert({dim, d});
}

void KernelEmitter::fail(NodeId n, const std::string& why) const {
  throw Error(p_.file, p_.node(n).loc, "codegen: " + why);
}

std::vector<DimView> KernelEmitter::all_views(const TensorType& t) const {
  return tile_view(p_, t, lp_.unit_axes);
}

std::vector<DimView> KernelEmitter::tile_dims(const TensorType& t) const {
  std::vector<DimView> out;
  for (const DimView& v : all_views(t))
    if (!v.squeezed) out.push_back(v);
  return out;
}

void KernelEmitter::stmt(const std::string& line) { block(current_).body.push_back({line, nullptr}); }

// ---- signature bookkeeping ---------------------------------------------------------

void KernelEmitter::use_buffer(int b) {
  if (std::find(sig_.buffers.begin(), sig_.buffers.end(), b) == sig_.buffers.end()) sig_.buffers.push_back(b);
}

std::string KernelEmitter::stride(int b, Symbol d) {
  use_buffer(b);
  sig_.strides[b].insert(d);
  return names_.stride(b, d);
}

std::string KernelEmitter::extent(Symbol d) {
  sig_.extents.insert(d);
  return names_.extent(d);
}

std::string KernelEmitter::tile(const DimView& v) {
  const auto key = std::make_pair(v.dim.raw(), v.depth);
  sig_.tiles.emplace(key, TilePad::None);
  if (auto it = tile_aliases_.find(key); it != tile_aliases_.end()) return it->second;
  return names_.tile(v);
}

void KernelEmitter::dot_dim(const DimView& v) { sig_.tiles[std::make_pair(v.dim.raw(), v.depth)] = TilePad::Dot; }

void KernelEmitter::gemv_dot_dim(const DimView& v) {
  TilePad& pad = sig_.tiles[std::make_pair(v.dim.raw(), v.depth)];
  pad = std::max(pad, TilePad::GemvDot);
}

std::string KernelEmitter::gemv_dot() {
  sig_.gemv_dot = true;
  return "GEMV_DOT";
}

std::string KernelEmitter::input_precision() {
  sig_.input_precision = true;
  return "INPUT_PRECISION";
}

// ---- scopes, coordinates, offsets and masks ----------------------------------------

std::vector<int> KernelEmitter::chain() const {
  std::vector<int> out;
  for (int s = current_; s >= -1; s = parent(s)) {
    out.push_back(s);
    if (s == -1) break;
  }
  return out;
}

KernelEmitter::Coord KernelEmitter::coord(Axis a) const {
  std::string block = lp_.unit_axes.count(a) ? "1" : names_.block(a);
  for (int s : chain())
    if (s >= 0 && kernel_.loops[size_t(s)].axis == a) return Coord{loop_vars_.at(s), block};
  if (auto it = pids_.find(a); it != pids_.end()) return Coord{it->second, block};
  throw Error(p_.file, p_.node(kernel_.root).loc,
              "codegen: internal error: no coordinate for axis " + a.name() + " in kernel " + kernel_.name);
}

int KernelEmitter::defining_scope(const DimView& v) const {
  std::vector<int> ch = chain();
  size_t best = ch.size() - 1;  // the top
  for (int l = 0; l < v.depth; ++l) {
    Axis a{v.dim, uint8_t(l)};
    for (size_t i = 0; i < ch.size(); ++i)
      if (ch[i] >= 0 && kernel_.loops[size_t(ch[i])].axis == a) best = std::min(best, i);
  }
  return ch[best];
}

const KernelEmitter::Index& KernelEmitter::index(const DimView& v) {
  int scope = defining_scope(v);
  auto key = std::make_pair(view_key(v), scope);
  if (auto it = indices_.find(key); it != indices_.end()) return it->second;

  Index ix;
  std::string base = py_ident(v.dim.str());
  if (multi_depth_.count(view_key(v)) && v.depth > 0)
    base = py_ident(Axis{v.dim, uint8_t(v.depth - 1)}.name());
  std::vector<std::string>& out = block(scope).prologue;
  // The start of the innermost block: sum of coordinate * block size.
  auto start_from = [&](int level) {
    std::vector<std::string> terms;
    for (int l = level; l < v.depth; ++l) {
      Coord c = coord(Axis{v.dim, uint8_t(l)});
      terms.push_back(c.block == "1" ? c.expr : c.expr + " * " + c.block);
    }
    return join(terms, " + ");
  };
  auto block_of = [&](int level) { return coord(Axis{v.dim, uint8_t(level)}).block; };

  if (v.squeezed && (v.depth == 0 || is_fixed_one(p_, v.dim))) {
    ix.offs = "0";
    ix.scalar = true;
  } else if (v.squeezed) {
    ix.scalar = true;
    ix.offs = locals_.fresh("offs_" + base);
    out.push_back(ix.offs + " = " + start_from(0));
    if (v.depth >= 2) {
      // A unit block inside a ragged outer block may fall past the end of
      // the dim or of an enclosing block: one comparison with the smallest
      // end (a tensor in compiled and interpreted kernels alike).
      std::string limit = extent(v.dim);
      std::vector<std::string> start;
      for (int l = 0; l + 1 < v.depth; ++l) {
        Coord c = coord(Axis{v.dim, uint8_t(l)});
        start.push_back(c.block == "1" ? c.expr : c.expr + " * " + c.block);
        limit = "tl.minimum(" + limit + ", " + join(start, " + ") + " + " + c.block + ")";
      }
      ix.mask = locals_.fresh("mask_" + base);
      out.push_back(ix.mask + " = " + ix.offs + " < " + limit);
    }
  } else if (v.depth == 0) {
    ix.offs = locals_.fresh("offs_" + base);
    out.push_back(ix.offs + " = tl.arange(0, " + tile(v) + ")");
    // A fixed extent that is a power of two of at least 16 is its own tile
    // (dot operands pad to 16): no position is past the end.
    const DimInfo* info = p_.dims.find(v.dim);
    bool exact = info && !info->collected_from && info->extent >= 16 &&
                 (info->extent & (info->extent - 1)) == 0;
    if (!exact) {
      ix.mask = locals_.fresh("mask_" + base);
      out.push_back(ix.mask + " = " + ix.offs + " < " + extent(v.dim));
    }
  } else {
    std::string r = "tl.arange(0, " + tile(v) + ")";
    ix.offs = locals_.fresh("offs_" + base);
    ix.mask = locals_.fresh("mask_" + base);
    out.push_back(ix.offs + " = " + start_from(0) + " + " + r);
    // Past the dim's end, past the block's own size (a tile padded to a power
    // of two), and past the enclosing block for inner levels.
    std::vector<std::string> conds{"(" + ix.offs + " < " + extent(v.dim) + ")",
                                   "(" + r + " < " + block_of(v.depth - 1) + ")"};
    for (int l = 1; l < v.depth; ++l)
      conds.push_back("(" + start_from(l) + " + " + r + " < " + block_of(l - 1) + ")");
    std::string mask = join(conds, " & ");
    Axis a{v.dim, 0};
    if (v.depth == 1 && !lp_.unit_axes.count(a)) {
      // Blocks that tile the dim exactly (the host's EVEN_ flag): a constant
      // mask, which Triton folds away with the selects and load masks it feeds.
      sig_.evens.insert(a);
      auto alias = even_aliases_.find(a);
      mask = "tl.full((" + tile(v) + ",), True, tl.int1) if " +
             (alias != even_aliases_.end() ? alias->second : names_.even(a)) + " else " + mask;
    }
    out.push_back(ix.mask + " = " + mask);
  }
  return indices_.emplace(key, std::move(ix)).first->second;
}

Expr KernelEmitter::offs_expr(const DimView& v, const std::vector<DimView>& to) {
  const Index& ix = index(v);
  if (ix.scalar) return Expr{ix.offs, kAtom};
  Value o;
  o.expr = Expr{ix.offs, kAtom};
  o.dims = {v};
  o.dtype = DType::I32;
  return expand(o, to);
}

std::string KernelEmitter::mask_expr(const std::vector<DimView>& views, const std::vector<DimView>& to) {
  std::vector<std::string> vectors, scalars;
  for (const DimView& v : views) {
    const Index& ix = index(v);
    if (ix.mask.empty()) continue;
    if (ix.scalar) {
      scalars.push_back(ix.mask);
      continue;
    }
    Value m;
    m.expr = Expr{ix.mask, kAtom};
    m.dims = {v};
    m.dtype = DType::Bool;
    vectors.push_back(expand(m, to).text);
  }
  // Scalar masks select with tl.where rather than `&`: Triton's interpreter
  // turns `scalar & tensor` of booleans into int32, which a mask cannot be.
  std::string out = join(vectors, " & ");
  for (const std::string& s : scalars) out = out.empty() ? s : "tl.where(" + s + ", " + out + ", False)";
  return out;
}

// ---- values of nodes ------------------------------------------------------------------

const TileTuple& KernelEmitter::value_of(NodeId n) const {
  for (int s : chain())
    if (auto it = values_.find({n.v, s}); it != values_.end()) return it->second;
  throw Error(
      p_.file, p_.node(n).loc,
      "codegen: internal error: " + std::string(op_info(p_.node(n).op).name) + " has no value in scope");
}

TileTuple KernelEmitter::operand(NodeId c) const {
  const Type& ct = p_.type(c).get();
  if (!ct.is_tuple && ct.tensor().literal) return TileTuple{{literal(fold_literal(p_, c))}};
  return value_of(c);
}

std::string KernelEmitter::var_hint(NodeId n) const {
  if (Symbol s = p_.name_of(n); s.valid()) return std::string(s.str());
  const Node& node = p_.node(n);
  switch (node.op) {
    case Op::Reduce: {
      RedId r = attr_red(node.attrs, 1);
      if (r == RedId::add()) return "sum_" + py_ident(attr_sym(node.attrs, 0).str());
      if (r == RedId::max()) return "max_" + py_ident(attr_sym(node.attrs, 0).str());
      return "red";
    }
    case Op::MatMul:
    case Op::TileMatMul:
      return "dot";
    default:
      return std::string(op_info(node.op).name);
  }
}

// ---- emission -------------------------------------------------------------------------

void KernelEmitter::emit_block(const Block& b, int scope) {
  for (const Item& it : b.items) {
    current_ = scope;
    switch (it.kind) {
      case Item::Kind::Compute:
        emit_compute(it.node, scope);
        break;
      case Item::Kind::Load:
        emit_load(kernel_.loads[size_t(it.index)], scope);
        break;
      case Item::Kind::Loop:
        emit_loop(it.index, scope);
        break;
    }
  }
  current_ = scope;
}

// Whether n's value reaches more than one use through aliases (tuple, proj,
// replicate), where an inlined expression would be evaluated once per use.
bool KernelEmitter::reused_through_alias(NodeId n) const {
  auto it = user_.find(n.v);
  if (it == user_.end() || it->second.v == NodeId{}.v) return false;
  NodeId user = it->second;
  Op op = p_.node(user).op;
  if (op != Op::Tuple && op != Op::Proj && op != Op::Replicate) return false;
  auto uses = uses_.find(user.v);
  return uses == uses_.end() || uses->second != 1 || reused_through_alias(user);
}

void KernelEmitter::emit_compute(NodeId n, int scope) {
  const Node& node = p_.node(n);
  std::vector<TileTuple> kids;
  for (NodeId c : p_.children(n)) kids.push_back(operand(c));
  hint_ = var_hint(n);
  auto h = holds_.find(n.v);
  bool held = h != holds_.end() && kids[size_t(h->second)].parts.size() == 1 &&
              kids[size_t(h->second)].parts[0].dims == tile_dims(p_.type(n).get().tensor());
  // A mask that holds on every position of this loop's blocks is its branch.
  TileTuple v = held ? kids[size_t(h->second)] : op_emitter(node.op)(*this, n, kids);
  bool alias = node.op == Op::Tuple || node.op == Op::Proj || node.op == Op::Replicate;
  if (!alias && v.parts.size() == 1) {
    Value& x = v.parts[0];
    // The one operand of an exp stays inline whatever its length: the exp
    // emitter reads a difference's operands (emit_Exp).
    auto user = user_.find(n.v);
    bool exp_operand = user != user_.end() && user->second.v != NodeId{}.v && p_.node(user->second).op == Op::Exp;
    bool inline_ok = !p_.name_of(n).valid() && uses_[n.v] == 1 && use_scope_[n.v] == scope &&
                     (x.expr.text.size() <= 60 || exp_operand);
    if (!inline_ok) x = bind(x, hint_);
  }
  if (auto it = shifts_.find(n.v); it != shifts_.end() && it->second.loop == scope && v.parts.size() == 1) {
    // The block max, replaced by the running max for every later use in the
    // block (triton_running_max.cc says why that is exact).
    Shift& s = it->second;
    const std::string& acc = s.acc.expr.text;
    stmt("# " + acc + ": the block's terms against the running max (no rescaling of the block)");
    Value m = bind(v.parts[0], hint_);
    s.m_new = bind(call("tl.maximum", s.acc, m), acc + "_new");
    s.m_use = bind(where(compare(s.m_new, "==", literal(-std::numeric_limits<double>::infinity())),
                         literal(0), s.m_new),
                   acc + "_shift");
    s.emitted = true;
    v.parts[0] = s.m_use;
  }
  set_value(n, scope, std::move(v));
}

Value KernelEmitter::load_part(const Load& ld, int part, const std::string& name) {
  const TensorType& t = p_.type(ld.node).get().parts.at(size_t(part < 0 ? 0 : part));
  std::vector<DimView> views = all_views(t);
  std::vector<DimView> tile = tile_dims(t);
  // A 2-D tile of a buffer whose layout has the tile's dims the other way
  // round is loaded in the buffer's order and transposed after: Triton's
  // pipeliner does not turn a load into an asynchronous copy when a
  // transpose stands between it and tl.dot (a [128, 256] weight tile loaded
  // against its layout ran 40x slower, spilled through registers), and
  // tl.dot takes the transposed operand as it was stored (contract() drops
  // the double transpose).
  std::vector<DimView> order = tile;
  if (ld.buffer >= 0 && ld.views.empty() && tile.size() == 2) {
    const Buffer& buf = lp_.buffers[size_t(ld.buffer + (part >= 0 ? part : std::max(ld.component, 0)))];
    auto at = [&](Symbol d) { return std::find(buf.layout.begin(), buf.layout.end(), d) - buf.layout.begin(); };
    if (at(tile[0].dim) > at(tile[1].dim)) std::swap(order[0], order[1]);
  }
  const bool transposed = order != tile;
  // The index of every dim of the loaded value, then through the layout
  // views down to the buffer's own dims (for iota: to its one dim).
  std::map<Symbol, Expr> idx;
  for (const DimView& v : views) idx[v.dim] = offs_expr(v, order);
  for (NodeId view : ld.views) {
    const Node& vn = p_.node(view);
    if (vn.op == Op::Rename) {
      Symbol from = attr_sym(vn.attrs, 0), to = attr_sym(vn.attrs, 1);
      idx[from] = idx.at(to);
      idx.erase(to);
    } else if (vn.op == Op::Split) {
      Symbol d = attr_sym(vn.attrs, 0), outer = attr_sym(vn.attrs, 1), inner = attr_sym(vn.attrs, 2);
      idx[d] = Expr{
          paren(idx.at(outer), kProduct) + " * " + extent(inner) + " + " + paren(idx.at(inner), kSum), kSum};
      idx.erase(outer);
      idx.erase(inner);
    } else if (vn.op == Op::Merge) {
      Symbol outer = attr_sym(vn.attrs, 0), inner = attr_sym(vn.attrs, 1), d = attr_sym(vn.attrs, 2);
      std::string whole = paren(idx.at(d), kProduct + 1);
      idx[outer] = Expr{whole + " // " + extent(inner), kProduct};
      idx[inner] = Expr{whole + " % " + extent(inner), kProduct};
      idx.erase(d);
    }
  }
  if (ld.buffer < 0) {  // iota: the index itself, e.g. hi * 4 + lo under a split
    if (idx.size() > 1) fail(ld.node, "iota under layout ops with more than one dim left (a bug)");
    Value v;
    v.dims = tile;
    v.dtype = DType::I32;
    v.expr = idx.empty() ? Expr{"0", kAtom} : idx.begin()->second;
    // A scalar index (the squeezed dim of extent 1 has offset 0) may be a
    // Python int: make it a 0-d tensor, so that casts and comparisons apply.
    if (tile.empty()) v.expr = Expr{"(tl.zeros([], tl.int32) + " + v.expr.text + ")", kAtom};
    return v;
  }
  int b = ld.buffer + (part >= 0 ? part : std::max(ld.component, 0));
  const Buffer& buf = lp_.buffers[size_t(b)];
  use_buffer(b);
  std::string addr = address(b, buf, idx, ld.node);
  std::string mask = mask_expr(views, order);
  if (!live_.empty()) {
    // tl.where rather than `mask & live`: Triton's interpreter (3.9) widens
    // a scalar int1 broadcast by `&` to int32, which tl.load refuses.
    std::vector<std::string> shape;
    for (const DimView& d : order) shape.push_back(KernelEmitter::tile(d));
    if (mask.empty() && !shape.empty())
      mask = "tl.full((" + join(shape, ", ") + (shape.size() == 1 ? ",)" : ")") + ", True, tl.int1)";
    mask = mask.empty() ? live_ : "tl.where(" + live_ + ", " + mask + ", False)";
  }
  std::string other = dtype_is_float(buf.dtype) ? "0.0" : "0";
  std::string args = mask.empty() ? addr : addr + ", mask=" + mask + ", other=" + other;
  std::string var = locals_.fresh(name);
  std::string line = var + " = tl.load(" + args + ")";
  if (line.size() + 4 * size_t(chain().size()) > 100)
    line = var + " = tl.load(\n    " + addr +
           (mask.empty() ? "" : ",\n    mask=" + mask + ", other=" + other) + ",\n)";
  stmt(line);
  Value v;
  v.expr = Expr{transposed ? "tl.trans(" + var + ")" : var, kAtom};
  v.dims = tile;
  v.dtype = buf.dtype;
  v.zero_padded = true;
  return v;
}

void KernelEmitter::emit_load(const Load& ld, int scope) {
  std::string name;
  if (Symbol s = p_.name_of(ld.node); s.valid())
    name = std::string(s.str());
  else if (ld.buffer >= 0)
    name = lp_.buffers[size_t(ld.buffer)].name + (ld.node == ld.source ? "" : "_tile");
  else
    name = "iota_" + py_ident(attr_sym(p_.node(ld.source).attrs, 0).str());
  if (ld.component >= 0 && ld.buffer >= 0) name = lp_.buffers[size_t(ld.buffer + ld.component)].name;
  const Type& t = p_.type(ld.node).get();
  TileTuple v;
  if (t.is_tuple) {
    for (size_t i = 0; i < t.parts.size(); ++i)
      v.parts.push_back(load_part(ld, int(i), name + "_" + std::to_string(i)));
  } else {
    v.parts.push_back(load_part(ld, -1, name));
  }
  set_value(ld.node, scope, std::move(v));
}

void KernelEmitter::emit_loop(int li, int scope) {
  const Loop& loop = kernel_.loops[size_t(li)];
  RedId red = attr_red(p_.node(loop.preduce).attrs, 1);

  // Accumulators named after the block values they gather.
  std::vector<NodeId> parts = loop_parts(p_, loop);
  Symbol pname = p_.name_of(loop.preduce);
  size_t comment_at = block(scope).body.size();
  std::vector<Value> acc;
  std::vector<std::string> acc_names;
  for (size_t i = 0; i < loop.accumulators.size(); ++i) {
    std::string hint;
    if (i < parts.size() && p_.name_of(parts[i]).valid())
      hint = state_name(std::string(p_.name_of(parts[i]).str()));
    else if (loop.accumulators.size() == 1 && pname.valid())
      hint = std::string(pname.str());
    else if (pname.valid())
      hint = std::string(pname.str()) + "_" + std::to_string(i);
    else
      hint = loop.accumulators.size() == 1 ? "acc" : "acc_" + std::to_string(i);
    const Accumulator& a = loop.accumulators[i];
    Value v;
    v.expr = Expr{locals_.fresh(hint), kAtom};
    for (const DimView& d : a.dims)
      if (!d.squeezed) v.dims.push_back(d);
    std::vector<std::string> shape;
    for (const DimView& d : v.dims) shape.push_back(tile(d));
    std::string shape_text = "(" + join(shape, ", ") + (shape.size() == 1 ? ",)" : ")");
    acc_names.push_back(v.expr.text);
    if (a.red.base == RedBase::Max)
      stmt(v.expr.text + " = tl.full(" + shape_text + ", float(\"-inf\"), tl.float32)");
    else
      stmt(v.expr.text + " = tl.zeros(" + shape_text + ", dtype=tl.float32)");
    acc.push_back(std::move(v));
  }

  std::string var = locals_.fresh(py_ident(loop.axis.name()));
  loop_vars_[li] = var;
  Axis a = loop.axis;
  std::string count;
  std::string step = lp_.unit_axes.count(a) ? "1" : names_.block(a);
  if (a.level == 0) {
    count = step == "1" ? extent(a.dim) : "tl.cdiv(" + extent(a.dim) + ", " + step + ")";
  } else {
    Axis outer{a.dim, uint8_t(a.level - 1)};
    std::string outer_block = lp_.unit_axes.count(outer) ? "1" : names_.block(outer);
    count = step == "1" ? outer_block : "tl.cdiv(" + outer_block + ", " + step + ")";
  }
  if (step != "1") sig_.blocks.insert(a);
  block(scope).body.insert(block(scope).body.begin() + long(comment_at),
                           {"# preduce over " + a.name() + " with " + reduction_text(red) +
                                ": running state " + join(acc_names, ", "),
                            nullptr});
  std::optional<LoopRange> r;
  if (a.level == 0) r = masked_range(li, count, step);
  if (!r) {
    emit_loop_pass(li, scope, var, "range(0, " + count + ")", acc, "");
    set_value(loop.preduce, scope, TileTuple{acc});
    return;
  }
  std::string lo = r->lo, hi = locals_.fresh("hi_" + var);
  if (r->lo != "0") lo = locals_.fresh("lo_" + var);
  if (r->lo != "0" || r->hi != count) {
    stmt("# " + a.name() + ": only the blocks where " + r->mask_name +
         " can hold; the others add nothing to the state");
  }
  if (lo != "0") stmt(lo + " = " + r->lo);
  stmt(hi + " = " + r->hi);
  // A body emitted more than once must not hold loops of its own (their
  // state would be emitted twice over).
  bool nested_loops = false;
  for (const Loop& l : kernel_.loops) nested_loops = nested_loops || l.parent == li;
  if (r->holds.empty() || nested_loops) {
    emit_loop_pass(li, scope, var, "range(" + lo + ", " + hi + ")", acc, "");
    set_value(loop.preduce, scope, TileTuple{acc});
    return;
  }
  // The blocks on which the mask holds everywhere, in a loop of their own
  // without it; the blocks around them (the diagonal of a causal mask) keep it.
  std::string mid_lo = lo, mid_hi = hi;
  if (!r->full_lo.empty()) {
    mid_lo = locals_.fresh("full_lo_" + var);
    stmt(mid_lo + " = tl.minimum(tl.maximum(" + lo + ", " + r->full_lo + "), " + hi + ")");
  }
  if (!r->full_hi.empty()) {
    mid_hi = locals_.fresh("full_hi_" + var);
    // Both bounds are at least 0: only a lower bound above 0 needs the maximum.
    std::string end = "tl.minimum(" + hi + ", " + r->full_hi + ")";
    stmt(mid_hi + " = " + (mid_lo == "0" ? end : "tl.maximum(" + end + ", " + mid_lo + ")"));
  }
  const std::string held = "the blocks where " + r->mask_name + " holds everywhere: no mask";
  if (mid_lo != lo) emit_loop_pass(li, scope, var, "range(" + lo + ", " + mid_lo + ")", acc, "");
  holds_ = r->holds;
  emit_loop_pass(li, scope, var, "range(" + mid_lo + ", " + mid_hi + ")", acc, held);
  holds_.clear();
  if (mid_hi != hi) emit_loop_pass(li, scope, var, "range(" + mid_hi + ", " + hi + ")", acc, "");
  set_value(loop.preduce, scope, TileTuple{acc});
}

void KernelEmitter::emit_loop_pass(int li, int scope, const std::string& var, const std::string& range,
                                   const std::vector<Value>& acc, const std::string& comment) {
  const Loop& loop = kernel_.loops[size_t(li)];
  // A fresh body: the values and indices of an earlier pass are not in scope.
  for (auto it = values_.begin(); it != values_.end();) it = it->first.second == li ? values_.erase(it) : ++it;
  for (auto it = indices_.begin(); it != indices_.end();) it = it->first.second == li ? indices_.erase(it) : ++it;
  std::vector<NodeId> parts = loop_parts(p_, loop);
  for (size_t j : running_max_components(li)) shifts_[parts[j].v] = Shift{li, acc[j], {}, {}, false};
  auto nested = std::make_unique<StmtBlock>();
  blocks_[li] = nested.get();
  if (!comment.empty()) stmt("# " + comment);
  block(scope).body.push_back({"for " + var + " in " + range + ":", std::move(nested)});
  current_ = li;
  emit_block(loop.body, li);
  current_ = li;
  TileTuple blk = value_of(p_.children(loop.preduce)[0]);
  emit_merge(loop, acc, blk.parts);
  current_ = scope;
}

// Merges a block's values into the running state, component by component, as
// the reduction's data says (docs/ir.md "Reductions"). Components other
// components' repairs read are updated through temporaries, so every repair
// sees the state from before this block.
void KernelEmitter::emit_merge(const Loop& loop, const std::vector<Value>& acc,
                               const std::vector<Value>& blk0) {
  const double neg_inf = -std::numeric_limits<double>::infinity();
  std::vector<RedComponent> comps;
  for (const Accumulator& a : loop.accumulators) comps.push_back(a.red);
  size_t n = comps.size();
  if (blk0.size() != n)
    fail(loop.preduce, "preduce: the body has " + std::to_string(blk0.size()) + " parts for " +
                           std::to_string(n) + " reduction components");
  // Max components whose block terms were computed against the running max.
  const int li = int(&loop - kernel_.loops.data());
  std::map<size_t, const Shift*> shifted;
  std::vector<NodeId> parts = loop_parts(p_, loop);
  for (size_t j = 0; j < n && j < parts.size(); ++j) {
    auto it = shifts_.find(parts[j].v);
    if (it != shifts_.end() && it->second.loop == li && it->second.emitted) shifted.emplace(j, &it->second);
  }
  std::vector<Value> blk(n);
  for (size_t i = 0; i < n; ++i)
    if (!shifted.count(i)) blk[i] = bind(to_float(blk0[i]), acc[i].expr.text + "_blk");

  std::vector<bool> read(n, false);
  for (const RedComponent& c : comps) {
    if (c.repair != Repair::None) read[c.arg0] = true;
    if (c.repair == Repair::WelfordM2) read[c.arg1] = true;
  }
  std::vector<Value> next(n);  // the new value of a read component (a temporary)
  std::vector<std::string> assigns;
  auto assign = [&](size_t i, const Value& v) {
    if (v.dims != acc[i].dims)
      fail(loop.preduce,
           "preduce: the merged state of component " + std::to_string(i) +
               " does not have the accumulator's dims (a repair broadcasts into a smaller state)");
    if (read[i]) {
      next[i] = bind(v, acc[i].expr.text + "_new");
      assigns.push_back(acc[i].expr.text + " = " + next[i].expr.text);
    } else {
      stmt(acc[i].expr.text + " = " + v.expr.text);
    }
  };

  for (size_t i = 0; i < n; ++i) {
    if (comps[i].repair != Repair::None) continue;
    if (shifted.count(i))
      assign(i, shifted.at(i)->m_new);
    else if (comps[i].base == RedBase::Add)
      assign(i, binary(acc[i], "+", kSum, blk[i]));
    else
      assign(i, call("tl.maximum", acc[i], blk[i]));
  }
  // exp-sum: both sides rescaled to the new max; a side whose max is -inf
  // (nothing seen yet, or a block with no valid position) contributes 0.
  std::map<size_t, std::pair<Value, Value>> scales;
  for (size_t i = 0; i < n; ++i) {
    if (comps[i].repair != Repair::ExpSum) continue;
    size_t j = comps[i].arg0;
    if (shifted.count(j)) {
      // The block is against the running max already: only the state is
      // rescaled (exp(-inf - m) is 0 for an empty state; m is finite).
      if (!scales.count(j)) {
        Value alpha = bind(call("tl.exp", binary(acc[j], "-", kSum, shifted.at(j)->m_use)), "alpha");
        scales.emplace(j, std::make_pair(alpha, Value{}));
      }
      assign(i, binary(binary(acc[i], "*", kProduct, scales.at(j).first), "+", kSum, blk[i]));
      continue;
    }
    if (!scales.count(j)) {
      auto scale = [&](const Value& m) {
        return where(compare(m, "==", literal(neg_inf)), literal(0),
                     call("tl.exp", binary(m, "-", kSum, next[j])));
      };
      Value alpha = bind(scale(acc[j]), "alpha");
      Value beta = bind(scale(blk[j]), "beta");
      scales.emplace(j, std::make_pair(alpha, beta));
    }
    const auto& [alpha, beta] = scales.at(j);
    // The block's own state is NaN where its max is -inf (exp(-inf - -inf):
    // a row with no valid or unmasked position): it counts as empty there.
    Value blk_i = where(compare(blk[j], "==", literal(neg_inf)), literal(0), blk[i]);
    assign(i, binary(binary(acc[i], "*", kProduct, alpha), "+", kSum, binary(blk_i, "*", kProduct, beta)));
  }
  // welford-mean over count N: the count-weighted mean (0 while N is 0).
  for (size_t i = 0; i < n; ++i) {
    if (comps[i].repair != Repair::WelfordMean) continue;
    size_t c = comps[i].arg0;
    Value weighted =
        binary(binary(acc[c], "*", kProduct, acc[i]), "+", kSum, binary(blk[c], "*", kProduct, blk[i]));
    assign(i, where(compare(next[c], ">", literal(0)), binary(weighted, "/", kProduct, next[c]), literal(0)));
  }
  // welford-m2 over count N and mean A (Chan's merge).
  for (size_t i = 0; i < n; ++i) {
    if (comps[i].repair != Repair::WelfordM2) continue;
    size_t c = comps[i].arg0, m = comps[i].arg1;
    Value delta = bind(binary(blk[m], "-", kSum, acc[m]), "delta");
    Value weight = binary(binary(acc[c], "*", kProduct, blk[c]), "/", kProduct, next[c]);
    Value shift = where(compare(next[c], ">", literal(0)),
                        binary(binary(delta, "*", kProduct, delta), "*", kProduct, weight), literal(0));
    assign(i, binary(binary(acc[i], "+", kSum, blk[i]), "+", kSum, shift));
  }
  for (const std::string& s : assigns) stmt(s);
}

void KernelEmitter::emit_store(const Store& st) {
  current_ = -1;
  const TileTuple& tv = value_of(st.value);
  const Value& v = tv.parts.at(size_t(std::max(st.component, 0)));
  const TensorType& t = p_.type(st.value).get().parts.at(size_t(std::max(st.component, 0)));
  std::vector<DimView> views = all_views(t);
  std::vector<DimView> tile = tile_dims(t);
  const Buffer& buf = lp_.buffers[size_t(st.buffer)];
  use_buffer(st.buffer);
  if (v.literal)
    fail(st.value,
         "store of " + buf.name + ": the stored value is a literal constant; expected a computed tensor");
  if (v.dims != tile)
    fail(st.value, "store of " + buf.name + ": the value's tile does not match its type (a bug)");

  std::map<Symbol, Expr> idx;
  for (const DimView& d : views) idx[d.dim] = offs_expr(d, tile);
  if (st.collected) idx[st.collected->collected_dim()] = Expr{coord(*st.collected).expr, kAtom};
  std::string addr = address(st.buffer, buf, idx, st.value);
  std::string value = v.expr.text;
  if (v.dtype != buf.dtype) value = convert_text(v.expr, v.dtype, buf.dtype);
  std::string mask = mask_expr(views, tile);
  std::string line = "tl.store(" + addr + ", " + value + (mask.empty() ? "" : ", mask=" + mask) + ")";
  if (line.size() + 4 > 100)
    line =
        "tl.store(\n    " + addr + ",\n    " + value + (mask.empty() ? "" : ",\n    mask=" + mask) + ",\n)";
  stmt(line);
}

void KernelEmitter::build() {
  if (built_) return;
  built_ = true;
  for (size_t i = 0; i < kernel_.grid.size(); ++i) {
    Axis a = kernel_.grid[i];
    std::string pid = locals_.fresh("pid_" + py_ident(a.name()));
    pids_[a] = pid;
    if (!lp_.unit_axes.count(a)) sig_.blocks.insert(a);
    top_.prologue.push_back(pid + " = " +
                            (i < program_ids_.size() ? program_ids_[i] : "tl.program_id(" + std::to_string(i) + ")"));
  }
  current_ = -1;
  if (std::string live = grid_live(); !live.empty()) {
    // Programs whose block the index mask rules out store constants: their
    // loads read nothing.
    live_ = locals_.fresh("live");
    top_.prologue.push_back(live_ + " = " + live);
  }
  emit_block(kernel_.body, -1);
  for (const Store& st : kernel_.stores) emit_store(st);
}

void KernelEmitter::write_body(CodeWriter& w) {
  build();
  render(top_, w);
}

std::vector<std::string> kernel_params(const Program& p, const LoweredProgram& lp, const ModuleNames& names,
                                       const KernelSignature& sig) {
  // Parameters: pointers, then the compile-time strides, extents and sizes.
  // Strides and extents are constexprs: shapes are fixed per module and the
  // strides of a given caller's tensors rarely change, and with them known
  // Triton folds the address and bound arithmetic of every tile (a new stride
  // set compiles another specialization; it is never wrong).
  std::vector<std::string> lines;
  std::vector<std::string> ptrs;
  for (int b : sig.buffers) ptrs.push_back(names.ptr(b));
  for (const std::string& l : wrap(ptrs)) lines.push_back(l);
  for (int b : sig.buffers) {
    std::vector<std::string> s;
    auto strides = sig.strides.find(b);
    for (Symbol d : lp.buffers[size_t(b)].layout)
      if (strides != sig.strides.end() && strides->second.count(d)) s.push_back(names.stride(b, d) + ": tl.constexpr");
    for (const std::string& l : wrap(s)) lines.push_back(l);
  }
  std::vector<std::string> ext;
  for (const DimInfo& d : p.dims.all())
    if (sig.extents.count(d.name)) ext.push_back(names.extent(d.name) + ": tl.constexpr");
  for (const std::string& l : wrap(ext)) lines.push_back(l);
  std::vector<std::string> cx;
  for (Axis a : lp.axes)
    if (sig.blocks.count(a)) cx.push_back(names.block(a) + ": tl.constexpr");
  for (Axis a : lp.axes)
    if (sig.evens.count(a)) cx.push_back(names.even(a) + ": tl.constexpr");
  std::vector<std::pair<std::pair<int, int>, std::string>> tiles;
  for (const auto& [key, dot] : sig.tiles) {
    Symbol d = Symbol::from_raw(key.first);
    tiles.push_back({{p.dims.order(d), key.second}, names.tile(DimView{d, key.second, false})});
  }
  std::sort(tiles.begin(), tiles.end());
  for (const auto& [order, name] : tiles) cx.push_back(name + ": tl.constexpr");
  for (const auto& alias : sig.tile_aliases) cx.push_back(std::get<0>(alias) + ": tl.constexpr");
  for (const auto& alias : sig.even_aliases) cx.push_back(std::get<0>(alias) + ": tl.constexpr");
  if (sig.input_precision) cx.push_back("INPUT_PRECISION: tl.constexpr");
  if (sig.gemv_dot) cx.push_back("GEMV_DOT: tl.constexpr");
  for (const std::string& l : wrap(cx)) lines.push_back(l);
  return lines;
}

void write_jit_def(CodeWriter& w, const std::string& name, const std::vector<std::string>& param_lines) {
  w.line("@triton.jit");
  w.line("def " + name + "(");
  {
    auto params = w.indent();
    for (const std::string& l : param_lines) w.line(l);
  }
  w.line("):");
}

void KernelEmitter::write(CodeWriter& w) {
  build();
  write_jit_def(w, kernel_.name, kernel_params(p_, lp_, names_, sig_));
  auto body = w.indent();
  std::string role;
  const Buffer& first = lp_.buffers[size_t(kernel_.stores.front().buffer)];
  std::string root_name = first.name;
  if (p_.node(kernel_.root).op == Op::Collect) {
    Symbol s = p_.name_of(kernel_.root);
    root_name = s.valid()              ? std::string(s.str())
                : first.component >= 0 ? first.name.substr(0, first.name.rfind('_'))
                                       : first.name;
    role = "Collected states " + root_name + ", one row of c_" + kernel_.grid.front().name() + " per program";
  } else {
    role = (first.kind == BufferKind::Output ? "Output " : "Intermediate ") + first.name;
  }
  std::string grid;
  for (Axis a : kernel_.grid) grid += (grid.empty() ? "" : ", ") + a.name();
  std::vector<std::string> loops;
  for (const Loop& l : kernel_.loops) loops.push_back(l.axis.name());
  w.comment(role + "; grid over " + (grid.empty() ? std::string("one program") : grid) +
            (loops.empty() ? "" : ", loops over " + join(loops, ", ")) + ". It implements:");
  for (const std::string& line : region_text(p_, lp_, kernel_, root_name)) w.comment(line, 100, 4);
  render(top_, w);
}

}  // namespace eqf::codegen
