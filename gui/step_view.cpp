#include "gui/step_view.hpp"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

namespace twin::gui {

namespace {

constexpr int kLabelWidth = 150, kMargin = 12, kLayerGroups = 4;

Stream stream_of_breakdown(const std::string& name) {
  if (name == "tp_comm") return Stream::tp;
  if (name == "ep_comm") return Stream::ep;
  if (name == "dp_comm_exposed") return Stream::dp;
  if (name == "pipeline_bubble_and_p2p") return Stream::p2p;
  if (name == "optimizer") return Stream::optimizer;
  return Stream::compute;
}

QString breakdown_name(const std::string& name) {
  if (name == "tp_comm") return "TP collectives";
  if (name == "ep_comm") return "EP all-to-all";
  if (name == "dp_comm_exposed") return "exposed DP/FSDP";
  if (name == "pipeline_bubble_and_p2p") return "pipeline bubble + P2P";
  if (name == "optimizer") return "optimizer";
  if (name == "compute") return "compute";
  return QString::fromStdString(name);
}

QString short_stream(Stream s) {
  switch (s) {
    case Stream::compute:
      return "compute";
    case Stream::tp:
      return "TP";
    case Stream::ep:
      return "EP";
    case Stream::dp:
      return "DP/FSDP";
    case Stream::p2p:
      return "pipeline P2P";
    default:
      return "";
  }
}

QString op_tip(const workload::StepProgram& program, const sim::TimelineOp& op,
               const QString& what) {
  QString tip = QString("stage %1: %2\n%3 - %4 (%5)")
                    .arg(op.stage)
                    .arg(what)
                    .arg(duration_text(op.start_s), duration_text(op.end_s),
                         duration_text(op.end_s - op.start_s));
  if (op.compute_s > 0)
    tip += QString("\ncompute %1, TP %2, EP %3")
               .arg(duration_text(op.compute_s), duration_text(op.tp_s), duration_text(op.ep_s));
  const QStringList kernels = kernel_lines(program, op);
  if (!kernels.isEmpty()) tip += "\nkernels:\n  " + kernels.join("\n  ");
  return tip;
}

}  // namespace

QStringList kernel_lines(const workload::StepProgram& program, const sim::TimelineOp& op) {
  QStringList lines;
  const auto stage = static_cast<std::size_t>(op.stage);
  if (op.chunk < 0) {  // the optimizer step, or a communication op
    if (op.name == "optimizer" && stage < program.optimizer.size())
      for (const auto& k : program.optimizer[stage].kernels)
        lines << QString("%1  %2  %3 (%4)")
                     .arg(QString::fromStdString(k.name), QString::fromStdString(k.shape),
                          duration_text(k.time_s), workload::to_string(k.limiter));
    return lines;
  }
  if (stage >= program.chunks.size()) return lines;
  const auto& chunks = program.chunks[stage];
  const auto c = static_cast<std::size_t>(op.chunk);
  if (c >= chunks.size()) return lines;
  // Per block kind (layer, embedding, output layer): its kernels once, slowest first, the
  // profiler's view of where one layer's time goes.
  constexpr int kShown = 6;
  for (const auto& block : chunks[c].blocks) {
    std::vector<workload::Kernel> kernels = op.forward ? block.forward : block.backward;
    if (!op.forward) kernels.insert(kernels.end(), block.recompute.begin(), block.recompute.end());
    if (kernels.empty()) continue;
    double total = 0;
    for (const auto& k : kernels) total += k.time_s;
    lines << QString("%1 x%2: %3 kernels, %4 each")
                 .arg(QString::fromStdString(block.label))
                 .arg(block.count)
                 .arg(kernels.size())
                 .arg(duration_text(total));
    std::stable_sort(kernels.begin(), kernels.end(),
                     [](const auto& a, const auto& b) { return a.time_s > b.time_s; });
    for (std::size_t i = 0; i < kernels.size() && i < kShown; ++i)
      lines << QString("  %1  %2  %3 (%4)")
                   .arg(QString::fromStdString(kernels[i].name),
                        QString::fromStdString(kernels[i].shape), duration_text(kernels[i].time_s),
                        workload::to_string(kernels[i].limiter));
  }
  return lines;
}

StepView::StepView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setAutoFillBackground(true);
  QPalette pal = palette();
  pal.setColor(QPalette::Window, Qt::white);
  setPalette(pal);
  setMinimumSize(600, 400);
}

void StepView::show_step(const sim::StepReport& report, const std::string& title) {
  report_ = report;
  title_ = QString::fromStdString(title);
  layout_bars();
  reset_zoom();
}

void StepView::layout_bars() {
  tracks_.clear();
  bars_.clear();
  int stages = 0;
  bool has[5] = {true, false, false, false, false};  // compute, tp, ep, dp, p2p
  for (const auto& op : report_.timeline) {
    stages = std::max(stages, op.stage + 1);
    has[1] = has[1] || op.tp_s > 0;
    has[2] = has[2] || op.ep_s > 0;
    has[3] = has[3] || op.stream != "compute";
    has[4] = has[4] || op.p2p_end_s > op.p2p_start_s;
  }
  const Stream order[5] = {Stream::compute, Stream::tp, Stream::ep, Stream::dp, Stream::p2p};
  std::vector<std::array<int, 5>> row(static_cast<std::size_t>(stages));
  for (int s = 0; s < stages; ++s)
    for (int k = 0; k < 5; ++k) {
      row[s][k] = -1;
      if (!has[k]) continue;
      row[s][k] = static_cast<int>(tracks_.size());
      tracks_.push_back({s, order[k]});
    }
  for (const auto& op : report_.timeline) {
    const auto& r = row[static_cast<std::size_t>(op.stage)];
    const QString name = QString::fromStdString(op.name);
    if (op.stream != "compute") {
      bars_.push_back({r[3], op.start_s, op.end_s, stream_color(Stream::dp),
                       op_tip(report_.program, op, name)});
      continue;
    }
    if (op.name == "optimizer") {
      bars_.push_back({r[0], op.start_s, op.end_s, stream_color(Stream::optimizer),
                       op_tip(report_.program, op, "optimizer step")});
      continue;
    }
    const bool forward = !name.startsWith("B");
    const QColor compute =
        forward ? stream_color(Stream::compute).lighter(135) : stream_color(Stream::compute);
    const QString what = (forward ? "forward " : "backward ") + name;
    if (op.p2p_end_s > op.p2p_start_s && r[4] >= 0)
      bars_.push_back({r[4], op.p2p_start_s, op.p2p_end_s, stream_color(Stream::p2p),
                       QString("stage %1: %2 transfer into %3\n%4")
                           .arg(op.stage)
                           .arg(QString(forward ? "activation" : "gradient"), name,
                                duration_text(op.p2p_end_s - op.p2p_start_s))});
    const double work = op.compute_s + op.tp_s + op.ep_s;
    if (work <= 0) {  // no split reported: the whole op on the compute track
      bars_.push_back({r[0], op.start_s, op.end_s, compute, op_tip(report_.program, op, what)});
      continue;
    }
    // Layer groups of compute, then TP, then EP; whatever is left waited for DP/FSDP traffic.
    const double dur = op.end_s - op.start_s;
    const double k = std::min(1.0, dur / work);
    double t = op.start_s;
    const QString tip = op_tip(report_.program, op, what);
    for (int g = 0; g < kLayerGroups; ++g) {
      const double c = op.compute_s * k / kLayerGroups, tp = op.tp_s * k / kLayerGroups,
                   ep = op.ep_s * k / kLayerGroups;
      bars_.push_back({r[0], t, t + c, compute, tip});
      if (tp > 0 && r[1] >= 0)
        bars_.push_back({r[1], t + c, t + c + tp, stream_color(Stream::tp), tip});
      if (ep > 0 && r[2] >= 0)
        bars_.push_back({r[2], t + c + tp, t + c + tp + ep, stream_color(Stream::ep), tip});
      t += c + tp + ep;
    }
    if (op.end_s - t > 1e-9 * dur)
      bars_.push_back({r[0], t, op.end_s, stream_color(Stream::dp).lighter(150),
                       QString("stage %1: %2 waits for overlapped DP/FSDP traffic (%3)")
                           .arg(op.stage)
                           .arg(what, duration_text(op.end_s - t)),
                       true});
  }
}

void StepView::reset_zoom() {
  t0_ = 0;
  t1_ = std::max(1e-9, report_.step_time_s);
  update();
}

void StepView::zoom(double factor, double anchor) {
  const double span = t1_ - t0_, at = t0_ + anchor * span;
  const double full = std::max(1e-9, report_.step_time_s);
  const double next = std::clamp(span / factor, full * 1e-4, full);
  t0_ = std::clamp(at - anchor * next, 0.0, full - next);
  t1_ = t0_ + next;
  update();
}

void StepView::pan(double fraction) {
  const double span = t1_ - t0_, full = std::max(1e-9, report_.step_time_s);
  t0_ = std::clamp(t0_ + fraction * span, 0.0, full - span);
  t1_ = t0_ + span;
  update();
}

QRect StepView::plot_rect() const {
  // Header: title (2 lines), breakdown bar, legend (2 rows); footer: axis.
  const int line = fontMetrics().height();
  const int top = kMargin + 2 * line + 8 + 22 + line + 8 + 2 * (line + 4) + 10;
  return QRect(kLabelWidth, top, width() - kLabelWidth - kMargin,
               height() - top - 2 * line - kMargin - 8);
}

double StepView::axis_unit() const {
  return t1_ - t0_ >= 2.0 ? 1.0 : 1e-3;  // seconds, or milliseconds for short ranges
}

std::vector<double> StepView::ticks() const {
  const double u = axis_unit();
  std::vector<double> out;
  const double step = nice_step((t1_ - t0_) / u, 8);
  for (double t = std::ceil(t0_ / u / step - 1e-9) * step; t <= t1_ / u + 1e-9 * step; t += step)
    out.push_back(std::abs(t) < 1e-12 ? 0.0 : t);
  return out;
}

QStringList StepView::legend_entries() const {
  QStringList out;
  for (Stream s :
       {Stream::compute, Stream::tp, Stream::ep, Stream::dp, Stream::p2p, Stream::optimizer}) {
    const bool shown =
        s == Stream::compute || s == Stream::optimizer ||
        std::any_of(tracks_.begin(), tracks_.end(), [&](const Track& t) { return t.stream == s; });
    if (shown) out << stream_name(s);
  }
  out << "waiting for overlapped DP/FSDP traffic (hatched)";
  return out;
}

QStringList StepView::axis_labels() const {
  return {axis_unit() == 1.0 ? "time within the step (s)" : "time within the step (ms)",
          "pipeline stage and stream"};
}

QStringList StepView::track_names() const {
  QStringList out;
  for (const auto& t : tracks_)
    out << QString("stage %1: %2").arg(t.stage).arg(short_stream(t.stream));
  return out;
}

void StepView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::TextAntialiasing);
  const int line = fontMetrics().height();
  const auto& r = report_;
  int y = kMargin;
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.drawText(QRect(kMargin, y, width() - 2 * kMargin, line), Qt::AlignLeft, title_);
  p.setFont(font());
  y += line;
  p.drawText(QRect(kMargin, y, width() - 2 * kMargin, line), Qt::AlignLeft,
             QString("step %1   %2 tokens/s   %3 TFLOP/s per GPU   MFU %4 %%5   critical stage %6")
                 .arg(duration_text(r.step_time_s), thousands(r.tokens_per_s))
                 .arg(r.tflops_per_gpu, 0, 'f', 0)
                 .arg(100 * r.mfu, 0, 'f', 1)
                 .arg(r.model_flops == "causal" ? " (causal attention FLOPs)" : "")
                 .arg(r.critical_stage));
  y += line + 8;

  // Breakdown of the critical stage, same colours as the tracks.
  const int bx = kLabelWidth, bw = width() - kLabelWidth - kMargin;
  p.drawText(QRect(kMargin, y, kLabelWidth - kMargin, 22), Qt::AlignVCenter, "where the time goes");
  double total = 0;
  for (const auto& [name, s] : r.breakdown) total += s;
  double x = bx;
  for (const auto& [name, s] : r.breakdown) {
    const double w = total > 0 ? s / total * bw : 0;
    const QColor c = stream_color(stream_of_breakdown(name));
    p.fillRect(QRectF(x, y, w, 22), c);
    const QString label =
        QString("%1 %2 %").arg(breakdown_name(name)).arg(100 * s / total, 0, 'f', 0);
    if (p.fontMetrics().horizontalAdvance(label) + 6 < w) {
      p.setPen(Qt::white);
      p.drawText(QRectF(x + 3, y, w - 3, 22), Qt::AlignVCenter, label);
      p.setPen(Qt::black);
    }
    x += w;
  }
  y += 22 + 4;
  QStringList shares;
  const sim::TimeShares kinds = sim::step_time_shares(r);
  for (const auto& [name, s] : r.breakdown) {
    if (!(s > 0)) continue;
    QString share = QString("%1 %2 %").arg(breakdown_name(name)).arg(100 * s / total, 0, 'f', 1);
    if (name == "compute")  // by kernel class, as shares of the step
      share += QString(" (GEMM %1, attention %2, memory-bound %3)")
                   .arg(100 * kinds.gemm, 0, 'f', 1)
                   .arg(100 * kinds.attention, 0, 'f', 1)
                   .arg(100 * kinds.memory, 0, 'f', 1);
    shares << share;
  }
  p.drawText(QRect(bx, y, bw, line), Qt::AlignLeft,
             QString("critical stage %1: ").arg(r.critical_stage) + shares.join(", "));
  y += line + 8;

  // Legend: one key for the bar and the tracks.
  int lx = kMargin;
  for (const QString& e : legend_entries()) {
    const int tw = p.fontMetrics().horizontalAdvance(e) + 30;
    if (lx + tw > width() - kMargin) {
      lx = kMargin;
      y += line + 4;
    }
    Stream s = Stream::compute;
    for (Stream k :
         {Stream::compute, Stream::tp, Stream::ep, Stream::dp, Stream::p2p, Stream::optimizer})
      if (stream_name(k) == e) s = k;
    const bool hatched = e.contains("hatched");
    if (s == Stream::compute && !hatched) {
      p.fillRect(QRect(lx, y + 2, 9, line - 4), stream_color(s).lighter(135));
      p.fillRect(QRect(lx + 9, y + 2, 9, line - 4), stream_color(s));
    } else {
      p.fillRect(QRect(lx, y + 2, 18, line - 4),
                 hatched ? stream_color(Stream::dp).lighter(150) : stream_color(s));
      if (hatched) p.fillRect(QRect(lx, y + 2, 18, line - 4), QBrush(Qt::white, Qt::BDiagPattern));
    }
    p.drawText(QRect(lx + 22, y, tw, line), Qt::AlignVCenter, e);
    lx += tw + 12;
  }

  // Tracks.
  const QRect plot = plot_rect();
  if (tracks_.empty()) return;
  const double row = static_cast<double>(plot.height()) / static_cast<double>(tracks_.size());
  const double scale = plot.width() / (t1_ - t0_);
  QFont small = font();
  small.setPointSizeF(std::clamp(row * 0.45, 6.0, font().pointSizeF()));
  p.setFont(small);
  for (std::size_t i = 0; i < tracks_.size(); ++i) {
    const double ty = plot.top() + static_cast<double>(i) * row;
    if (tracks_[i].stream == Stream::compute && i > 0) {
      p.setPen(QColor(150, 150, 150));
      p.drawLine(QPointF(kMargin, ty), QPointF(plot.right(), ty));
    } else if (i % 2 == 1) {
      p.fillRect(QRectF(plot.left(), ty, plot.width(), row), QColor(247, 247, 250));
    }
    p.setPen(Qt::black);
    p.drawText(QRectF(kMargin, ty, kLabelWidth - kMargin - 4, row),
               Qt::AlignVCenter | Qt::AlignRight,
               QString("stage %1 %2").arg(tracks_[i].stage).arg(short_stream(tracks_[i].stream)));
  }
  p.save();
  p.setClipRect(plot);
  for (const auto& b : bars_) {
    if (b.end_s < t0_ || b.start_s > t1_ || b.track < 0) continue;
    const double x0 = plot.left() + (b.start_s - t0_) * scale;
    const double w = std::max(0.6, (b.end_s - b.start_s) * scale);
    const QRectF rect(x0, plot.top() + b.track * row + 1, w, std::max(1.0, row - 2));
    p.fillRect(rect, b.color);
    if (b.hatched) p.fillRect(rect, QBrush(Qt::white, Qt::BDiagPattern));
  }
  p.restore();

  // Time axis with round ticks.
  p.setFont(font());
  p.setPen(Qt::black);
  p.drawLine(plot.bottomLeft(), plot.bottomRight());
  const double unit = axis_unit();
  for (double t : ticks()) {
    const double xt = plot.left() + (t * unit - t0_) * scale;
    p.setPen(QColor(225, 225, 230));
    p.drawLine(QPointF(xt, plot.top()), QPointF(xt, plot.bottom()));
    p.setPen(Qt::black);
    p.drawLine(QPointF(xt, plot.bottom()), QPointF(xt, plot.bottom() + 5));
    p.drawText(QRectF(xt - 40, plot.bottom() + 5, 80, line), Qt::AlignHCenter,
               QString::number(t, 'g', 6));
  }
  p.drawText(QRect(plot.left(), plot.bottom() + 5 + line, plot.width(), line), Qt::AlignHCenter,
             axis_labels().value(0) + "   (wheel: zoom, drag: pan, double click: whole step)");
}

void StepView::wheelEvent(QWheelEvent* event) {
  const QRect plot = plot_rect();
  const double anchor =
      std::clamp((event->position().x() - plot.left()) / std::max(1, plot.width()), 0.0, 1.0);
  zoom(event->angleDelta().y() > 0 ? 1.25 : 0.8, anchor);
}

void StepView::mousePressEvent(QMouseEvent* event) {
  drag_x_ = static_cast<int>(event->position().x());
  drag_t0_ = t0_;
}

void StepView::mouseMoveEvent(QMouseEvent* event) {
  if (!(event->buttons() & Qt::LeftButton) || drag_x_ < 0) return;
  const double dx = event->position().x() - drag_x_;
  const double span = t1_ - t0_;
  t0_ = drag_t0_;
  t1_ = t0_ + span;
  pan(-dx / std::max(1, plot_rect().width()));
}

void StepView::mouseDoubleClickEvent(QMouseEvent*) {
  reset_zoom();
}

bool StepView::event(QEvent* e) {
  if (e->type() != QEvent::ToolTip) return QWidget::event(e);
  auto* help = static_cast<QHelpEvent*>(e);
  const QRect plot = plot_rect();
  if (!plot.contains(help->pos()) || tracks_.empty()) {
    QToolTip::hideText();
    return true;
  }
  const double row = static_cast<double>(plot.height()) / static_cast<double>(tracks_.size());
  const int track = static_cast<int>((help->pos().y() - plot.top()) / row);
  const double t = t0_ + (help->pos().x() - plot.left()) * (t1_ - t0_) / plot.width();
  const double slack = 2 * (t1_ - t0_) / plot.width();
  for (const auto& b : bars_)
    if (b.track == track && b.start_s - slack <= t && t <= b.end_s + slack) {
      QToolTip::showText(help->globalPos(), b.tip, this);
      return true;
    }
  QToolTip::hideText();
  return true;
}

}  // namespace twin::gui
