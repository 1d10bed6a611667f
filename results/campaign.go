package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/checker"
)

// CampaignFile is a campaign's record in its directory, and
// CampaignIndexFile the index page rendered from it.
const (
	CampaignFile      = "campaign.json"
	CampaignIndexFile = "index.html"
)

// CampaignFormat is the version of campaign.json's layout.
const CampaignFormat = 1

// Campaign is campaign.json: a campaign's plan and what its runs showed.
// chaos campaign rewrites it after every run, so a campaign killed
// outright still leaves the finished runs on record; the index page is
// rendered from it. The guarantee model's parts (a cell's model, its
// permissions, a run's send counts) are the checker's types.
type Campaign struct {
	Format int    `json:"format"`
	Seed   uint64 `json:"seed"`
	Preset string `json:"preset,omitempty"`
	// SpecFile is the --spec file the campaign was read from, if any;
	// Spec the campaign as resolved from it, a preset or the flags.
	SpecFile string            `json:"spec_file,omitempty"`
	Spec     CampaignSpec      `json:"spec"`
	Store    string            `json:"store"`
	Command  []string          `json:"command"`
	Versions map[string]string `json:"versions"`
	Start    time.Time         `json:"start"`
	End      *time.Time        `json:"end,omitempty"`
	// Status is running, complete or interrupted. A campaign that was
	// killed outright stays "running".
	Status   string `json:"status"`
	ExitCode *int   `json:"exit_code,omitempty"`
	// Shard is the slice of the planned runs this campaign ran ("chaos
	// campaign --shard K/N"); absent, it ran them all. Its cells are all
	// the plan's, each with the runs of the slice (summary.planned counts
	// them).
	Shard *CampaignShard `json:"shard,omitempty"`
	// Merged lists the shard campaigns (directories as given to "chaos
	// campaign merge") this record was merged from.
	Merged []string `json:"merged,omitempty"`
	// Detection is the detection matrix of a campaign whose cells plant
	// bugs (CampaignCellPlan.Bugs): one row per cell, in the cells'
	// order, a control cell (one that plants none) included; absent when
	// no cell plants a bug. It is summed up from the cells' runs whenever
	// the record is written, and again by a merge.
	Detection []CampaignDetection `json:"detection,omitempty"`
	Cells     []*CampaignCell     `json:"cells"`
}

// CampaignDetection is what the runs of one cell of a detection campaign
// showed of the bugs it plants: whether, how often, with which anomaly
// and how soon they were caught. The guarantee model knows nothing of
// bugs, so a run catches its cell's bugs exactly when its verdict is
// invalid: some anomaly the configuration forbids was found. In a control
// cell, which plants no bug, such a run is a false alarm, and there must
// be none.
type CampaignDetection struct {
	// Cell is the cell's name; Scenario its label without the bugs: the
	// configuration, the nemesis and the cell's own run args.
	Cell     string `json:"cell"`
	Scenario string `json:"scenario"`
	// Bugs are the bugs the cell plants, in chaos bugs' order, each with
	// the node it lives in; none in a control cell.
	Bugs []CampaignBug `json:"bugs,omitempty"`
	// Planned counts the cell's planned runs (of the campaign's shard),
	// Runs those that ended (with a verdict or an error; interrupted ones
	// do not count), Errors the errors among them: a run that ended in an
	// error caught nothing, and counts in Runs all the same.
	Planned int `json:"planned"`
	Runs    int `json:"runs"`
	Errors  int `json:"errors,omitempty"`
	// Caught counts the runs whose verdict is invalid: the runs that
	// caught the bugs, or in a control cell the false alarms. A bug no
	// run caught has 0 here, and is never left out.
	Caught int `json:"caught"`
	// Anomalies counts, per anomaly, the runs in which it was found
	// forbidden (CampaignRun.Unexpected): what caught the bugs, or in a
	// control cell the unexpected anomalies.
	Anomalies map[string]int `json:"anomalies,omitempty"`
	// Timed counts the caught runs whose first detection is known
	// (CampaignRun.Detection). MedianTime and MedianOps are the medians
	// of those detections' times and operation counts: the middle value,
	// of an even count the lower of the two middle ones, so always one
	// run's. Absent when no caught run is timed.
	Timed      int       `json:"timed,omitempty"`
	MedianTime *Duration `json:"median_time,omitempty"`
	MedianOps  *int64    `json:"median_ops,omitempty"`
}

// CampaignBug is a bug a cell plants (chaos bugs) and the node it lives
// in: broker, controller or storage.
type CampaignBug struct {
	Name string `json:"name"`
	Node string `json:"node,omitempty"`
}

// CampaignShard is the K-th (Index, from 1) of N (Count) slices of a
// campaign's planned runs.
type CampaignShard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// CampaignSpec is a campaign as resolved: the matrix lists or explicit
// cells, and the settings of every run. Lists left out default to chaos
// run's defaults.
type CampaignSpec struct {
	// The matrix: every combination of these lists is a cell. Lists left
	// out default to the "chaos run" defaults (acks -1,
	// min.insync.replicas 2, clean, no nemesis).
	Acks              []Acks   `json:"acks,omitempty"`
	MinInsyncReplicas []int    `json:"min_insync_replicas,omitempty"`
	Election          []string `json:"election,omitempty"`
	// Nemesis lists one fault list per column, each a comma list as
	// "chaos run --nemesis" takes it ("none" for no faults).
	Nemesis []string `json:"nemesis,omitempty"`
	// Cells lists cells explicitly instead of a matrix, for campaigns
	// that are not a cross product (the smoke preset).
	Cells           []CampaignCellSpec `json:"cells,omitempty"`
	Runs            int                `json:"runs,omitempty"`
	TimeLimit       Duration           `json:"time_limit,omitempty"`
	NemesisInterval Duration           `json:"nemesis_interval,omitempty"`
	// RunArgs are further "chaos run" flags for every run, e.g.
	// ["--replica-lag-time-max-ms", "2000"].
	RunArgs []string `json:"run_args,omitempty"`
	// Runtime is every run's runtime: local (the default), docker or sim.
	Runtime string `json:"runtime,omitempty"`
}

// CampaignCellSpec is one explicit cell of a spec. Election defaults to
// clean and the nemesis to none.
type CampaignCellSpec struct {
	Acks              Acks   `json:"acks"`
	MinInsyncReplicas int    `json:"min_insync_replicas"`
	Election          string `json:"election,omitempty"`
	Nemesis           string `json:"nemesis,omitempty"`
	// Bugs are planted in the cell's cluster on purpose (chaos bugs): a
	// detection campaign's cells. None in a real test.
	Bugs []string `json:"bugs,omitempty"`
	// RunArgs are further "chaos run" flags of this cell's runs, after
	// the spec's own RunArgs (the scenario that exposes a bug, say).
	RunArgs []string `json:"run_args,omitempty"`
}

// UnmarshalJSON requires acks and min_insync_replicas, and refuses
// unknown fields: acks=0 is a real configuration, so a forgotten or
// misspelt field must not quietly become one.
func (c *CampaignCellSpec) UnmarshalJSON(b []byte) error {
	type plain CampaignCellSpec
	var raw struct {
		plain
		Acks              *Acks `json:"acks"`
		MinInsyncReplicas *int  `json:"min_insync_replicas"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("cell %s: %w", b, err)
	}
	if raw.Acks == nil || raw.MinInsyncReplicas == nil {
		return fmt.Errorf("cell %s: acks and min_insync_replicas are required", b)
	}
	*c = CampaignCellSpec(raw.plain)
	c.Acks, c.MinInsyncReplicas = *raw.Acks, *raw.MinInsyncReplicas
	return nil
}

// Acks is a producer acks setting as a spec gives it: a number, or a
// string as chaos run's --acks takes it ("all", "-1"), the two ways
// people write it. Whether the number is one Kafka knows is the plan's
// question (it names every impossible cell at once). It is written as a
// number.
type Acks int

func (a *Acks) UnmarshalJSON(b []byte) error {
	var n int
	if err := json.Unmarshal(b, &n); err == nil {
		*a = Acks(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if v, ok := ParseAcks(s); ok {
			*a = Acks(v)
			return nil
		}
	}
	return fmt.Errorf("acks must be 0, 1, -1 or \"all\", got %s", b)
}

// ParseAcks reads an acks setting as people write it: 0, 1, -1 or all
// (any case). chaos run's --acks, a campaign's and a spec file's are read
// by it.
func ParseAcks(s string) (int16, bool) {
	switch strings.ToLower(s) {
	case "0":
		return 0, true
	case "1":
		return 1, true
	case "-1", "all":
		return -1, true
	}
	return 0, false
}

// Duration is a time.Duration written as "30s" in JSON, as on the command
// line.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"30s\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// CampaignCell is one configuration x nemesis of the matrix: its plan and
// its runs.
type CampaignCell struct {
	CampaignCellPlan
	// Verdict is the worst of the runs': valid, unknown, error, invalid,
	// or not-run.
	Verdict string `json:"verdict"`
	// Observed is what the runs observed, the first of their classes in
	// ObservedOrder: the matrix shows it before the verdict. Absent in
	// records written before it existed.
	Observed string `json:"observed,omitempty"`
	// Refused says why chaos run refused the cell; its remaining runs
	// were not started.
	Refused string          `json:"refused,omitempty"`
	Summary CampaignSummary `json:"summary"`
	Runs    []CampaignRun   `json:"runs"`
}

// CampaignCellPlan is a cell as planned, before any run.
type CampaignCellPlan struct {
	// Name is the test name in the store, the one "chaos run" would pick
	// for the configuration, so a campaign's runs sit beside plain runs of
	// the same configuration.
	Name              string `json:"name"`
	Label             string `json:"label"`
	Acks              int    `json:"acks"`
	MinInsyncReplicas int    `json:"min_insync_replicas"`
	Election          string `json:"election"`
	Nemesis           string `json:"nemesis"`
	// Bugs are the bugs planted in every run of the cell on purpose
	// (test.json's cluster.bugs), in chaos bugs' order: the cell's own
	// and those of the campaign's run args; RunArgs the cell's own
	// "chaos run" flags (a detection campaign's scenario), which follow
	// the campaign's.
	Bugs    []string `json:"bugs,omitempty"`
	RunArgs []string `json:"run_args,omitempty"`
	// Args are the "chaos run" arguments of every run of the cell, less
	// --seed: with "--seed N" they replay the run (as "chaos sim" for a
	// simulated one), bugs and run args included.
	Args []string `json:"args"`
	// Model is what the guarantee model is told about the cell, and
	// Permitted what it permits there (anomaly -> permission and why);
	// Prediction sums it up in a few words.
	Model      checker.Config                `json:"model"`
	Permitted  map[string]checker.Permission `json:"permitted"`
	Prediction string                        `json:"prediction"`
}

// CampaignSummary counts a cell's runs by verdict and the anomalies seen.
type CampaignSummary struct {
	Planned     int `json:"planned"`
	Runs        int `json:"runs"`
	Valid       int `json:"valid"`
	Invalid     int `json:"invalid"`
	Unknown     int `json:"unknown"`
	Errors      int `json:"errors"`
	Interrupted int `json:"interrupted"`
	// ExpectedSeen counts per permitted anomaly the runs that showed it;
	// Unexpected per forbidden anomaly.
	ExpectedSeen map[string]int `json:"expected_seen,omitempty"`
	Unexpected   map[string]int `json:"unexpected,omitempty"`
	// Availability is the share of sends acknowledged (nil: not
	// measured, e.g. acks=0).
	Availability *float64 `json:"availability,omitempty"`
	// Observed counts the runs by what they observed (ObservedOrder);
	// ExpectedInstances sums the runs' instances of each permitted
	// anomaly (of lost-write, the acknowledged writes lost).
	Observed          map[string]int `json:"observed,omitempty"`
	ExpectedInstances map[string]int `json:"expected_instances,omitempty"`
	// UnexpectedInstances sums the runs' forbidden instances of each
	// anomaly (of lost-write, the acknowledged writes lost that the
	// configuration promised to keep).
	UnexpectedInstances map[string]int `json:"unexpected_instances,omitempty"`
	// Recovery sums up the recovery of the runs' fault windows; absent
	// when no run recorded one.
	Recovery *CampaignRecovery `json:"recovery,omitempty"`
}

// CampaignRecovery sums up a cell's fault windows' recovery
// (WindowRecovery): over every window of its runs, how many had each
// time observed, and their median (the lower middle value, so always one
// window's) and maximum.
type CampaignRecovery struct {
	Windows  int              `json:"windows"`
	FirstAck CampaignDurStats `json:"first_ack"`
	FullISR  CampaignDurStats `json:"full_isr"`
}

// CampaignDurStats are the median and maximum of the times observed, of
// Observed windows; absent when none was.
type CampaignDurStats struct {
	Observed int       `json:"observed"`
	Median   *Duration `json:"median,omitempty"`
	Max      *Duration `json:"max,omitempty"`
}

// CampaignRun is one run of a cell.
type CampaignRun struct {
	Run      int       `json:"run"`
	Seed     uint64    `json:"seed"`
	Verdict  string    `json:"verdict"`
	ExitCode int       `json:"exit_code"`
	Start    time.Time `json:"start"`
	Seconds  float64   `json:"seconds"`
	// Dir is the run's directory relative to the store (slashes); Log its
	// output relative to the campaign's directory.
	Dir        string   `json:"dir,omitempty"`
	Log        string   `json:"log"`
	Expected   []string `json:"expected,omitempty"`
	Unexpected []string `json:"unexpected,omitempty"`
	Unknown    []string `json:"unknown,omitempty"`
	// NotChecked names the checks the cluster cannot support: a valid
	// verdict speaks of the others only.
	NotChecked []string `json:"not_checked,omitempty"`
	// Sends counts the run's sends by outcome.
	Sends        *checker.OpCounts `json:"sends,omitempty"`
	FaultWindows int               `json:"fault_windows"`
	// Observed is what the run observed (Observe); ExpectedInstances
	// counts the instances of each permitted anomaly it found (under
	// acks=0, of lost-write, the records read and then lost).
	Observed          string         `json:"observed,omitempty"`
	ExpectedInstances map[string]int `json:"expected_instances,omitempty"`
	// UnexpectedInstances counts the forbidden instances of each anomaly
	// it found forbidden.
	UnexpectedInstances map[string]int `json:"unexpected_instances,omitempty"`
	// WindowsRan counts the fault windows that started (FaultWindows
	// counts those scheduled), WindowsBit those seen to bite
	// (WindowRecovery.Bit), and Recovery is each window's recovery, as
	// results.json holds it.
	WindowsRan int              `json:"windows_ran,omitempty"`
	WindowsBit int              `json:"windows_bit,omitempty"`
	Recovery   []WindowRecovery `json:"recovery,omitempty"`
	// Detection is when the run first showed an anomaly its
	// configuration forbids; absent for a run that showed none, or whose
	// results name no operation of a forbidden instance.
	Detection *CampaignRunDetection `json:"detection,omitempty"`
	Error     string                `json:"error,omitempty"`
}

// CampaignRunDetection is a run's first detection (checker.FirstDetection):
// of the operations results.json names as part of forbidden instances,
// the client operation (not the nemesis's or the monitor's) that
// completed first. It says when the failure first shows in the history
// (for a lost write, the acknowledgement of the write later lost), not
// when a checker could first have known: most anomalies are judged from
// the final reads.
type CampaignRunDetection struct {
	// Anomaly is the forbidden anomaly whose instance names the
	// operation; Op the index (history.jsonl's "index") of its completion.
	Anomaly string `json:"anomaly"`
	Op      int64  `json:"op"`
	// Time is when it completed, since the workload started (virtual
	// time in a simulated run), to the millisecond.
	Time Duration `json:"time"`
	// Ops counts the client operations completed up to it, itself
	// included.
	Ops int64 `json:"ops"`
}

// ReadCampaign reads a campaign's campaign.json.
func ReadCampaign(file string) (Campaign, error) { return readJSON[Campaign](file) }
