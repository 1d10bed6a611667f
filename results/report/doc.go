// Package report renders the result store's files as HTML pages for
// people.
//
// The pages are self-contained HTML (inline CSS and SVG, no script, no
// fetch), rendered with html/template so that whatever a history holds is
// escaped:
//
//   - a run's report.html (LoadRun, RenderRun, WriteRun, WriteJudgedRun):
//     the verdict and the guarantee table first, the configuration and the
//     command that replays it, plots on one shared time axis with the
//     fault windows shaded (latency, throughput, ISR and HW per partition,
//     unavailability), the anomalies with their operations, every lost
//     write, and an excerpt of the history that every link points into;
//   - a campaign's index.html (RenderCampaign, WriteCampaign):
//     configurations by nemeses, the guarantee model's prediction against
//     what the runs showed;
//   - the store browser's page (ScanStore, RenderStore), which chaos serve
//     shows at its root; WritePage renders whichever page a run or
//     campaign directory lacks, and WriteTree (WriteTrees for chaos
//     report) every page below a directory.
//
// It reads what package results stores (test.json, results.json,
// campaign.json) and the history (package history), and judges nothing
// itself beyond what the checker's functions compute. Fault windows come
// from the history's nemesis operations, or from test.json's planned
// schedule when there are none.
//
// A report reads whatever a run left: a torn history, no results.json or
// no test.json still give a page that says what is missing. Long runs stay
// small: plots keep a bounded number of points per time column, and the
// history view is an excerpt. They are read small too: the history is
// read as a stream into a timeline of about 50 bytes per operation
// (never the operations themselves), the lost writes come from
// results.json, and the few thousand operations the page shows in full
// are read again from the file (history.ScanAt). docs/report.md describes
// the pages.
package report
