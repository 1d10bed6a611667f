package results

import (
	"encoding/json"
	"fmt"
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
	Merged []string        `json:"merged,omitempty"`
	Cells  []*CampaignCell `json:"cells"`
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
	Acks              []int    `json:"acks,omitempty"`
	MinInsyncReplicas []int    `json:"min_insync_replicas,omitempty"`
	Election          []string `json:"election,omitempty"`
	// Nemesis lists one fault list per column, each a comma list as
	// "chaos run --nemesis" takes it ("none" for no faults).
	Nemesis []string `json:"nemesis,omitempty"`
	// Cells lists cells explicitly instead of a matrix.
	Cells           []CampaignCellSpec `json:"cells,omitempty"`
	Runs            int                `json:"runs,omitempty"`
	TimeLimit       Duration           `json:"time_limit,omitempty"`
	NemesisInterval Duration           `json:"nemesis_interval,omitempty"`
	// RunArgs are further "chaos run" flags for every run.
	RunArgs []string `json:"run_args,omitempty"`
	Runtime string   `json:"runtime,omitempty"`
}

// CampaignCellSpec is one explicit cell of a spec.
type CampaignCellSpec struct {
	Acks              int    `json:"acks"`
	MinInsyncReplicas int    `json:"min_insync_replicas"`
	Election          string `json:"election,omitempty"`
	Nemesis           string `json:"nemesis,omitempty"`
	// Bugs are planted in the cell's cluster on purpose (chaos bugs).
	Bugs []string `json:"bugs,omitempty"`
	// RunArgs are further "chaos run" flags of the cell's runs.
	RunArgs []string `json:"run_args,omitempty"`
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
	// Args are the "chaos run" arguments of every run of the cell, less
	// --seed.
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
	// Sends counts the run's sends by outcome.
	Sends        *checker.OpCounts `json:"sends,omitempty"`
	FaultWindows int               `json:"fault_windows"`
	Error        string            `json:"error,omitempty"`
}

// ReadCampaign reads a campaign's campaign.json.
func ReadCampaign(file string) (Campaign, error) { return readJSON[Campaign](file) }
