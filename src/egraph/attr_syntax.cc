#include "egraph/attr_syntax.h"

#include <charconv>
#include <cmath>

#include "eqiforge/ir/dtype.h"

namespace eqf {

std::string number_text(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::string("nan");
}

int attr_width(AttrKind k) { return k == AttrKind::F64 ? 2 : 1; }

int attr_slot(Op op, int index) {
  const OpInfo& info = op_info(op);
  int slot = 0;
  for (int i = 0; i < index; ++i) slot += attr_width(info.attrs[i]);
  return slot;
}

std::string attr_text(Op op, const Attrs& a, int index) {
  const OpInfo& info = op_info(op);
  int slot = attr_slot(op, index);
  switch (info.attrs[index]) {
    case AttrKind::None:
      return "";
    case AttrKind::Sym:
    case AttrKind::Dim:
      return std::string(attr_sym(a, slot).str());
    case AttrKind::Axis:
      return attr_axis(a, slot).name();
    case AttrKind::Red:
      return reduction_text(attr_red(a, slot));
    case AttrKind::DType:
      return std::string(dtype_name(attr_dtype(a, slot)));
    case AttrKind::Int:
      return std::to_string(a[slot]);
    case AttrKind::F64:
      return number_text(attr_f64(Attrs{a[slot], a[slot + 1], 0}));
  }
  return "";
}

bool parse_number_atom(const std::string& text, double& out) {
  if (text == "inf") return out = INFINITY, true;
  if (text == "-inf") return out = -INFINITY, true;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end && !text.empty();
}

namespace {

[[noreturn]] void fail(const SExpr& e, const std::string& file, const std::string& msg) {
  throw Error(file, e.loc, msg);
}

RedComponent parse_component(const SExpr& c, const std::string& file, const std::string& where) {
  if (c.is_atom("+")) return RedComponent{RedBase::Add};
  if (c.is_atom("max")) return RedComponent{RedBase::Max};
  struct Syntax {
    const char* keyword;
    Repair repair;
    size_t args;
  };
  static constexpr Syntax kRepairs[] = {{"exp-sum", Repair::ExpSum, 1},
                                        {"welford-mean", Repair::WelfordMean, 1},
                                        {"welford-m2", Repair::WelfordM2, 2}};
  if (c.is_list() && !c.items.empty()) {
    for (const Syntax& s : kRepairs) {
      if (!c.items[0].is_atom(s.keyword)) continue;
      if (c.items.size() != 1 + s.args)
        fail(c, file,
             std::string(s.keyword) + " in " + where + " expects " + std::to_string(s.args) + " index(es)");
      RedComponent out{RedBase::Add, s.repair};
      uint8_t* args[] = {&out.arg0, &out.arg1};
      for (size_t i = 0; i < s.args; ++i) {
        const SExpr& a = c.items[1 + i];
        int v = -1;
        if (a.is_atom()) {
          auto [p, ec] = std::from_chars(a.atom.data(), a.atom.data() + a.atom.size(), v);
          if (ec != std::errc() || p != a.atom.data() + a.atom.size()) v = -1;
        }
        if (v < 0 || v > 255)
          fail(a, file, "bad component index `" + sexpr_text(a) + "` in " + where + ": expected 0..255");
        *args[i] = uint8_t(v);
      }
      return out;
    }
  }
  fail(c, file,
       "bad reduction component `" + sexpr_text(c) + "` in " + where +
           ": expected +, max, (exp-sum J), (welford-mean N) or (welford-m2 N A)");
}

}  // namespace

void parse_attr(const SExpr& e, AttrKind k, Attrs& attrs, int slot, const std::string& file,
                const std::string& where) {
  auto need_atom = [&](const char* what) {
    if (!e.is_atom())
      fail(e, file, "expected " + std::string(what) + " in " + where + ", got `" + sexpr_text(e) + "`");
  };
  switch (k) {
    case AttrKind::None:
      break;
    case AttrKind::Sym:
    case AttrKind::Dim:
      need_atom(k == AttrKind::Sym ? "an input name" : "a dim name");
      attrs[slot] = Symbol::intern(e.atom).raw();
      break;
    case AttrKind::Axis: {
      need_atom("an axis such as m.0");
      std::optional<Axis> ax = Axis::parse(e.atom);
      if (!ax) fail(e, file, "bad axis `" + e.atom + "` in " + where + ": expected dim.level such as m.0");
      attrs[slot] = ax->pack();
      break;
    }
    case AttrKind::Red: {
      RedId r;
      if (e.is_atom("+")) {
        r = RedId::add();
      } else if (e.is_atom("max")) {
        r = RedId::max();
      } else if (e.is_list() && !e.items.empty()) {
        Reduction red;
        for (const SExpr& c : e.items) red.components.push_back(parse_component(c, file, where));
        if (std::optional<std::string> problem = red.validate())
          fail(e, file, "invalid reduction `" + sexpr_text(e) + "` in " + where + ": " + *problem);
        r = RedId::intern(red);
      } else {
        fail(e, file,
             "bad reduction `" + sexpr_text(e) + "` in " + where +
                 ": expected +, max or a tuple of components");
      }
      attrs[slot] = r.raw();
      break;
    }
    case AttrKind::DType: {
      need_atom("a dtype");
      std::optional<DType> t = parse_dtype(e.atom);
      if (!t)
        fail(e, file,
             "unknown dtype `" + e.atom + "` in " + where + ": expected f16, bf16, f32, f64, i32 or bool");
      attrs[slot] = uint32_t(*t);
      break;
    }
    case AttrKind::Int: {
      need_atom("a non-negative integer");
      uint32_t v = 0;
      auto [p, ec] = std::from_chars(e.atom.data(), e.atom.data() + e.atom.size(), v);
      if (ec != std::errc() || p != e.atom.data() + e.atom.size())
        fail(e, file, "bad integer `" + e.atom + "` in " + where + ": expected a non-negative integer");
      attrs[slot] = v;
      break;
    }
    case AttrKind::F64: {
      need_atom("a number");
      double v = 0;
      if (!parse_number_atom(e.atom, v))
        fail(e, file,
             "bad number `" + e.atom + "` in " + where + ": expected a number such as 2, -0.5, 1e-6 or inf");
      Attrs bits = attrs_f64(v);
      attrs[slot] = bits[0];
      attrs[slot + 1] = bits[1];
      break;
    }
  }
}

}  // namespace eqf
