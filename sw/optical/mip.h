// A mixed-integer program for GLPK (Debian's libglpk-dev): the glue the
// SiP-ML ILPs share (sw/optical/ocs.cpp, ring_plan.cpp). Internal to sw/optical.
#pragma once

#include <glpk.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace fabricvp::optical {

class Mip {
 public:
  Mip() : m_p(glp_create_prob(), glp_delete_prob) { glp_set_obj_dir(m_p.get(), GLP_MAX); }
  /// A continuous column >= 0 with objective coefficient `obj`; its index.
  int continuous(double obj);
  /// `n` binary columns; the index of the first.
  int binaries(int n);
  /// sum(terms) <= ub (type GLP_UP) or >= lb (GLP_LO).
  void row(int type, double lb, double ub, const std::vector<std::pair<int, double>>& terms);
  /// Solve to optimality within `time_limit_s`; false if GLPK did not; `why` then says why.
  bool solve(double time_limit_s, std::string& why);
  double value(int col) const { return glp_mip_col_val(m_p.get(), col); }

 private:
  std::unique_ptr<glp_prob, void (*)(glp_prob*)> m_p;
  std::vector<int> m_ia{0}, m_ja{0};
  std::vector<double> m_ar{0};
};

}  // namespace fabricvp::optical
