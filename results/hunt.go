package results

import "time"

// A hunt's directory is STORE/hunts/<UTC timestamp>/ (HuntsDir, named as
// a run's), pointed at by STORE/hunts/latest; it holds HuntFile, the
// hunt's record, and HuntPageFile, the page rendered from it.
const (
	HuntsDir     = "hunts"
	HuntFile     = "hunt.json"
	HuntPageFile = "hunt.html"
)

// HuntFormat is the version of hunt.json's layout.
const HuntFormat = 1

// Hunt is hunt.json: what chaos hunt searched with and what it found.
// It is rewritten as the hunt goes (after each finding, each unknown or
// failed run, every few seconds, and at the end), so a hunt killed
// outright leaves a record of what it had reached, its status still
// "running".
type Hunt struct {
	Format int    `json:"format"`
	Seed   uint64 `json:"seed"`
	// Command is the command line that repeats the hunt, its seed
	// included (a hunt given none drew one at random): the same seed
	// draws the same scenarios in the same order.
	Command  []string          `json:"command,omitempty"`
	Versions map[string]string `json:"versions,omitempty"`
	// Store is the store the hunt's runs are kept in, as it was given;
	// every Dir below is relative to it, with slashes.
	Store   string      `json:"store"`
	Options HuntOptions `json:"options"`
	Start   time.Time   `json:"start"`
	End     *time.Time  `json:"end,omitempty"`
	// Status is running, complete or interrupted.
	Status   string `json:"status"`
	ExitCode *int   `json:"exit_code,omitempty"`
	// Runs counts the runs taken, by how they ended; Seconds is the
	// hunt's wall time so far (the shrinking of a finding is not in it).
	Runs    int     `json:"runs"`
	Valid   int     `json:"valid"`
	Invalid int     `json:"invalid"`
	Unknown int     `json:"unknown"`
	Errors  int     `json:"errors"`
	Seconds float64 `json:"seconds"`
	// Coverage is how many distinct sequences of observed events the
	// hunt reached, Corpus how many scenarios it kept to mutate.
	Coverage int `json:"coverage"`
	Corpus   int `json:"corpus"`
	// Growth is the coverage after each run, as points of a step line:
	// every run where it grew and the last run, thinned to at most
	// MaxHuntGrowth points on a long hunt. A long flat stretch is a
	// plateau: the search no longer reaches anything new.
	Growth   []HuntGrowth  `json:"growth"`
	Findings []HuntFinding `json:"findings"`
	// Unjudged are the runs that ended unknown or in an error, in run
	// order: counted, kept in the store, and never a finding.
	Unjudged []HuntRun `json:"unjudged"`
}

// MaxHuntGrowth bounds hunt.json's growth points.
const MaxHuntGrowth = 500

// HuntOptions are the options a hunt ran with.
type HuntOptions struct {
	// Runs and Time are the budget (0: none of that kind).
	Runs       int      `json:"runs,omitempty"`
	Time       Duration `json:"time,omitempty"`
	Parallel   int      `json:"parallel"`
	Feedback   bool     `json:"feedback"`
	KeepGoing  bool     `json:"keep_going"`
	ShrinkRuns int      `json:"shrink_runs"`
	// Shard is the slice of the runs this hunt ran; absent, all.
	Shard *CampaignShard `json:"shard,omitempty"`
	// DrawConfig: each scenario drew its configuration under judgement;
	// else every one was judged as Config.
	DrawConfig bool       `json:"draw_config"`
	Config     HuntConfig `json:"config"`
	// Bugs are planted on purpose (chaos bugs); Kinds are the fault
	// kinds windows were drawn from.
	Bugs  []string `json:"bugs,omitempty"`
	Kinds []string `json:"kinds"`
	// Runtime is where the runs ran when not in simulation (local,
	// docker, external): in real time, so a finding's command runs its
	// scenario again rather than replaying it.
	Runtime string `json:"runtime,omitempty"`
}

// HuntConfig is the configuration under judgement.
type HuntConfig struct {
	Acks              int    `json:"acks"`
	MinInsyncReplicas int    `json:"min_insync_replicas"`
	Election          string `json:"election"`
}

// HuntGrowth is the coverage after run Run (numbered as HuntRun.Run),
// of every run the hunt had taken by then.
type HuntGrowth struct {
	Run      int `json:"run"`
	Coverage int `json:"coverage"`
}

// HuntFinding is a run whose configuration forbids what it showed.
type HuntFinding struct {
	HuntRun
	// Anomalies are those the configuration forbids (results.json's
	// unexpected).
	Anomalies []string `json:"anomalies"`
	// Shrunk is the smallest run found that still shows them, when the
	// finding was shrunk.
	Shrunk *HuntShrunk `json:"shrunk,omitempty"`
}

// HuntRun is one run of a hunt.
type HuntRun struct {
	// Run is its number in the hunt, from 1 (a shard's runs keep the
	// numbers of the whole hunt); Seed its seed.
	Run  int    `json:"run"`
	Seed uint64 `json:"seed"`
	// Elapsed is how long the hunt had gone when it took the run.
	Elapsed Duration `json:"elapsed"`
	// Verdict is invalid, unknown or error.
	Verdict string `json:"verdict"`
	// Scenario is the drawn scenario in one line; Replay the chaos sim
	// command that replays it byte for byte.
	Scenario string `json:"scenario"`
	Replay   string `json:"replay"`
	// Dir is the run's directory relative to the store (empty: the run
	// left none).
	Dir string `json:"dir,omitempty"`
	// Reason says why an unjudged run has no verdict of valid or
	// invalid: what could not be judged, or the error.
	Reason string `json:"reason,omitempty"`
}

// HuntShrunk is what shrinking a finding gave.
type HuntShrunk struct {
	// Dir is the smallest failing run's directory relative to the store,
	// Replay its command, Anomalies the forbidden ones it shows.
	Dir       string   `json:"dir,omitempty"`
	Replay    string   `json:"replay,omitempty"`
	Anomalies []string `json:"anomalies,omitempty"`
	// Schedule is its fault windows, Before and After the sizes of the
	// finding and of it.
	Schedule string   `json:"schedule,omitempty"`
	Before   HuntSize `json:"before"`
	After    HuntSize `json:"after"`
	// Runs is how many simulations the search ran; Exhausted: its budget
	// ended it, so a larger one may shrink further.
	Runs        int  `json:"runs"`
	Exhausted   bool `json:"exhausted,omitempty"`
	Interrupted bool `json:"interrupted,omitempty"`
	// Error says why there is no shrunk run (the replay did not fail).
	Error string `json:"error,omitempty"`
}

// HuntSize is how big a run is (sim.Size).
type HuntSize struct {
	Windows    int      `json:"windows"`
	WindowTime Duration `json:"window_time"`
	Ops        int64    `json:"ops"`
	TimeLimit  Duration `json:"time_limit"`
	Producers  int      `json:"producers"`
	Consumers  int      `json:"consumers"`
	Partitions int      `json:"partitions"`
	RatePerSec float64  `json:"rate"`
}

// ReadHunt reads a hunt's hunt.json.
func ReadHunt(file string) (Hunt, error) { return readJSON[Hunt](file) }
