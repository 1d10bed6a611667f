// Package results keeps what tests leave behind and renders it for people.
//
// The store has one directory per run (store/<test>/<timestamp>/:
// history.jsonl, test.json, results.json, node logs, report.html), a
// store/latest link to the newest, and atomic writes so that a reader
// never sees half a file.
//
// The pages are self-contained HTML (inline CSS and SVG, no script, no
// fetch), rendered with html/template so that whatever a history holds is
// escaped:
//
//   - a run's report (WriteReport, RenderReport): the verdict and the
//     guarantee table first, the configuration and the command that
//     replays it, plots on one shared time axis with the fault windows
//     shaded (latency, throughput, ISR and HW per partition,
//     unavailability), the anomalies with their operations, every lost
//     write, and an excerpt of the history that every link points into;
//   - a campaign's index (RenderCampaign): configurations by nemeses,
//     the guarantee model's prediction against what the runs showed;
//   - the store browser's page (ScanStore, RenderStore).
//
// A report reads whatever a run left: a torn history, no results.json or
// no test.json still give a page that says what is missing. Long runs stay
// small: plots keep a bounded number of points per time column, and the
// history view is an excerpt. docs/report.md describes the pages.
package results
