#include "sw/optical/mip.h"

#include <fmt/format.h>

#include <algorithm>

namespace fabricvp::optical {

int Mip::continuous(double obj) {
  const int c = glp_add_cols(m_p.get(), 1);
  glp_set_col_bnds(m_p.get(), c, GLP_LO, 0.0, 0.0);
  glp_set_obj_coef(m_p.get(), c, obj);
  return c;
}

int Mip::binaries(int n) {
  const int first = glp_add_cols(m_p.get(), n);
  for (int c = first; c < first + n; ++c) glp_set_col_kind(m_p.get(), c, GLP_BV);
  return first;
}

void Mip::row(int type, double lb, double ub, const std::vector<std::pair<int, double>>& terms) {
  const int r = glp_add_rows(m_p.get(), 1);
  glp_set_row_bnds(m_p.get(), r, type, lb, ub);
  for (const auto& [c, v] : terms) {
    m_ia.push_back(r);
    m_ja.push_back(c);
    m_ar.push_back(v);
  }
}

bool Mip::solve(double time_limit_s, std::string& why) {
  glp_load_matrix(m_p.get(), static_cast<int>(m_ia.size()) - 1, m_ia.data(), m_ja.data(), m_ar.data());
  glp_iocp parm;
  glp_init_iocp(&parm);
  parm.presolve = GLP_ON;
  parm.msg_lev = GLP_MSG_OFF;
  parm.tm_lim = static_cast<int>(std::min(time_limit_s * 1000.0, 2e9));
  const int rc = glp_intopt(m_p.get(), &parm);
  if (rc == 0 && glp_mip_status(m_p.get()) == GLP_OPT) return true;
  why = fmt::format("glp_intopt {}, status {}", rc, glp_mip_status(m_p.get()));
  return false;
}

}  // namespace fabricvp::optical
