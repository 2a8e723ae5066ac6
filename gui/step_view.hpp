#pragma once
// One training step: the breakdown of the critical stage as a bar, then per pipeline stage a
// track per stream — compute, TP collectives, EP all-to-all, DP/FSDP traffic, pipeline P2P —
// on a time axis with round ticks. One colour per stream in the bar, the tracks and the legend.
// The wheel zooms the time axis around the mouse, dragging pans, a double click shows the whole
// step; hover a bar for what it is.
//
// TP and EP collectives run between the layers of each forward and backward; the report gives
// their total per op, so the tracks show each op's compute, TP and EP time interleaved in four
// layer groups. Hovering a compute op lists its kernels per block (slowest first) from the step
// program, the profiler's view of one layer.

#include <QStringList>
#include <QWidget>

#include "gui/chart_style.hpp"
#include "twin/step_sim.hpp"

namespace twin::gui {

class StepView : public QWidget {
  Q_OBJECT
 public:
  explicit StepView(QWidget* parent = nullptr);
  void show_step(const sim::StepReport& report, const std::string& title);

  [[nodiscard]] QStringList legend_entries() const;
  [[nodiscard]] QStringList axis_labels() const;
  /// Track names ("stage 0: TP"), top to bottom.
  [[nodiscard]] QStringList track_names() const;
  /// Ticks of the time axis in the visible range, in the axis unit.
  [[nodiscard]] std::vector<double> ticks() const;
  /// Visible time range (s); zoom by `factor` around the middle (> 1 zooms in).
  [[nodiscard]] std::pair<double, double> visible_s() const { return {t0_, t1_}; }
  void zoom(double factor, double anchor_fraction = 0.5);
  void pan(double fraction);
  void reset_zoom();

 protected:
  void paintEvent(QPaintEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;

 private:
  struct Track {
    int stage;
    Stream stream;
  };
  struct Bar {
    int track;
    double start_s, end_s;
    QColor color;
    QString tip;
    bool hatched = false;
  };
  void layout_bars();
  [[nodiscard]] QRect plot_rect() const;
  [[nodiscard]] double axis_unit() const;

  sim::StepReport report_;
  QString title_;
  std::vector<Track> tracks_;
  std::vector<Bar> bars_;
  double t0_ = 0, t1_ = 1;
  int drag_x_ = -1;
  double drag_t0_ = 0;
};

/// Lines describing the kernels of a timeline op, for its tooltip: per block of its chunk (layer,
/// embedding, output layer) the kernel count and time, then the slowest kernels with shape, time
/// and limiter; the optimizer's kernels for the optimizer op; none for communication.
QStringList kernel_lines(const workload::StepProgram& program, const sim::TimelineOp& op);

}  // namespace twin::gui
