"""Report: shapes and draws what the stats stage wrote (figure tables, sentences, the check-list,
the HTML/PDF report and its RO-Crate); it computes no statistic."""
