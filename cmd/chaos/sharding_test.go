package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/chaos-isr/chaos/internal/cli"
	"github.com/chaos-isr/chaos/shard"
)

// docs/sharding.md's examples, run as written (issue 23): the GitHub
// Actions workflow's steps on a correct broker, its balance figures
// against the plans, and the Kubernetes Job's shards against the whole
// plan. The YAML is read as YAML (go.yaml.in/yaml/v3, which the module
// graph holds already), as GitHub and Kubernetes read it.

func shardingDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "sharding.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// yamlBlocks are the doc's ```yaml blocks.
func yamlBlocks(doc string) []string {
	var out []string
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(doc, -1) {
		out = append(out, m[1])
	}
	return out
}

// workflow is what the test reads of a GitHub Actions workflow.
type workflow struct {
	Name string            `yaml:"name"`
	Env  map[string]string `yaml:"env"`
	Jobs map[string]struct {
		Needs    any `yaml:"needs"`
		Strategy struct {
			Matrix map[string][]any `yaml:"matrix"`
		} `yaml:"strategy"`
		Steps []struct {
			Uses string            `yaml:"uses"`
			With map[string]string `yaml:"with"`
			Run  string            `yaml:"run"`
			If   string            `yaml:"if"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

var expr = regexp.MustCompile(`\$\{\{\s*([A-Za-z_.]+)\s*\}\}`)

// TestShardingWorkflow runs the doc's GitHub Actions workflow as GitHub
// would: the build job (make build, replaced by the binary under test),
// each shard of the matrix in a directory of its own (a machine of its
// own), and the merge, with the artifacts passed as the upload and
// download steps say. The one change is --runtime sim on the shards'
// campaign, so that the 60 runs take a minute, not half an hour. On a
// correct broker every step must succeed, each shard's campaign and the
// merge say VALID, and the merged record and JUnit report hold every
// run once.
func TestShardingWorkflow(t *testing.T) {
	if testing.Short() {
		// 60 simulated runs and 600 MB of stores tarred twice: a couple
		// of minutes on 2 cores.
		t.Skip("-short: the sharding workflow runs the whole seed preset")
	}
	requireCampaign(t)
	var wf workflow
	for _, b := range yamlBlocks(shardingDoc(t)) {
		if strings.HasPrefix(b, "name: campaign") {
			if err := yaml.Unmarshal([]byte(b), &wf); err != nil {
				t.Fatalf("the workflow is not YAML: %v", err)
			}
		}
	}
	if len(wf.Jobs) != 3 {
		t.Fatalf("docs/sharding.md: no workflow with the jobs build, shard and merge: %+v", wf)
	}
	root := t.TempDir()
	artifacts := map[string][]string{} // name -> files
	ctx := map[string]string{"github.run_id": "8812345678"}
	for k, v := range wf.Env {
		ctx["env."+k] = v
	}
	var env []string
	for k, v := range wf.Env {
		env = append(env, k+"="+v)
	}
	var outputs []string // what each shard's campaign and the merge printed
	runJob := func(job, dir string, matrix map[string]string) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		sub := func(s string) string {
			return expr.ReplaceAllStringFunc(s, func(e string) string {
				key := expr.FindStringSubmatch(e)[1]
				if v, ok := matrix[key]; ok {
					return v
				}
				v, ok := ctx[key]
				if !ok {
					t.Fatalf("%s: the workflow uses %s, which the test does not know", job, e)
				}
				return v
			})
		}
		for _, st := range wf.Jobs[job].Steps {
			with := map[string]string{}
			for k, v := range st.With {
				with[k] = sub(v)
			}
			switch {
			case strings.HasPrefix(st.Uses, "actions/checkout@"), strings.HasPrefix(st.Uses, "actions/setup-go@"):
				// The binary under test is the checkout's build.
			case strings.HasPrefix(st.Uses, "actions/upload-artifact@"):
				artifacts[with["name"]] = append(artifacts[with["name"]], filepath.Join(dir, with["path"]))
			case strings.HasPrefix(st.Uses, "actions/download-artifact@"):
				var names []string
				if with["name"] != "" {
					names = []string{with["name"]}
				} else {
					for n := range artifacts {
						if ok, _ := filepath.Match(with["pattern"], n); ok {
							names = append(names, n)
						}
					}
				}
				if len(names) == 0 {
					t.Fatalf("%s: no artifact %v to download", job, with)
				}
				for _, n := range names {
					for _, f := range artifacts[n] {
						copyFile(t, f, filepath.Join(dir, filepath.Base(f)))
					}
				}
			case st.Run == "make build":
				// make build puts the binary in bin/chaos.
				copyFile(t, chaosBin(t), filepath.Join(dir, "bin", "chaos"))
			case st.Run != "":
				script := sub(st.Run)
				if strings.Contains(script, "./chaos campaign ") && !strings.Contains(script, " merge ") {
					// The one change: simulated runs.
					script = strings.Replace(script, "./chaos campaign ", "./chaos campaign --runtime sim ", 1)
				}
				cmd := exec.Command("bash", "-e", "-c", script)
				cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
				start := time.Now()
				out, err := cmd.CombinedOutput()
				t.Logf("%s (%s): %s: %s", job, filepath.Base(dir), script, time.Since(start).Round(time.Millisecond))
				if err != nil {
					t.Fatalf("%s: the step %q failed (%v):\n%s", job, script, err, out)
				}
				if strings.Contains(script, "./chaos campaign ") {
					outputs = append(outputs, string(out))
				}
			default:
				t.Fatalf("%s: a step the test cannot run: %+v", job, st)
			}
		}
	}
	runJob("build", filepath.Join(root, "build"), nil)
	shards := wf.Jobs["shard"].Strategy.Matrix["shard"]
	if n, _ := strconv.Atoi(wf.Env["SHARDS"]); len(shards) != n {
		t.Fatalf("the matrix has %d shards, SHARDS says %s", len(shards), wf.Env["SHARDS"])
	}
	for _, k := range shards {
		runJob("shard", filepath.Join(root, fmt.Sprintf("shard-machine-%v", k)), map[string]string{"matrix.shard": fmt.Sprint(k)})
	}
	runJob("merge", filepath.Join(root, "merge"), nil)
	if len(outputs) != len(shards)+1 {
		t.Fatalf("%d campaign outputs, want %d shards and the merge", len(outputs), len(shards)+1)
	}
	for i, out := range outputs {
		if !regexp.MustCompile(`\nverdict: VALID \(exit 0\): \d+ runs: \d+ VALID\n`).MatchString(out) {
			t.Errorf("campaign %d of the workflow is not valid on a correct broker:\n%s", i+1, out)
		}
	}
	merged := filepath.Join(root, "merge", "merged")
	rec := readCampaign(t, merged)
	p := preset(t, "seed")
	runs := 0
	for _, c := range rec.Cells {
		runs += len(c.Runs)
		for _, r := range c.Runs {
			if r.Verdict != "valid" {
				t.Errorf("merged: %s run %d is %s", c.Name, r.Run, r.Verdict)
			}
		}
	}
	if z := p.Size(); runs != z.Cells*z.Runs || rec.Status != "complete" || *rec.ExitCode != 0 || len(rec.Merged) != len(shards) {
		t.Errorf("merged: %d runs (want %d), status %s, exit %d, merged from %d shards", runs, z.Cells*z.Runs, rec.Status, *rec.ExitCode, len(rec.Merged))
	}
	if n := strings.Count(readFile(t, filepath.Join(root, "merge", "junit.xml")), "<testcase "); n != runs {
		t.Errorf("junit.xml has %d testcases, want %d", n, runs)
	}
	if fi, err := os.Stat(filepath.Join(root, "merge", "campaign.tgz")); err != nil || fi.Size() == 0 {
		t.Errorf("the merge job made no campaign.tgz: %v", err)
	}
}

// TestShardingBalanceFigures: the slice sizes docs/sharding.md gives are
// the plans'.
func TestShardingBalanceFigures(t *testing.T) {
	doc := shardingDoc(t)
	m := regexp.MustCompile(`with ` + "`--runs 4`" + ` \((\d+) runs\) splits\s+into 4 shards of (\d+), (\d+), (\d+) and (\d+) runs; with one run per cell \((\d+) runs\) into\s+(\d+), (\d+), (\d+) and (\d+)\.`).FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("docs/sharding.md no longer gives the seed preset's slices in the words this test reads")
	}
	for i, runs := range []int{4, 1} {
		want := m[1+5*i : 6+5*i]
		p := preset(t, "seed")
		p.Runs = runs
		plan, err := planCampaign(p, "store")
		if err != nil {
			t.Fatal(err)
		}
		got := []string{strconv.Itoa(plan.Runs())}
		for k := 1; k <= 4; k++ {
			sh, _ := shard.Parse(fmt.Sprintf("%d/4", k))
			plan.Shard = sh
			got = append(got, strconv.Itoa(plan.Runs()))
			plan.Shard = shard.Shard{}
		}
		if !slices.Equal(got, want) {
			t.Errorf("--runs %d: the doc says %v (all, then each shard), the plan %v", runs, want, got)
		}
	}
}

// TestShardingKubernetes: the Indexed Job's pods, JOB_COMPLETION_INDEX 0
// to completions-1 expanded as Kubernetes expands it, plan shards that
// hold every run of the campaign once; the merge Job's arguments are
// accepted and name every shard's store.
func TestShardingKubernetes(t *testing.T) {
	var job, merge struct {
		Kind string `yaml:"kind"`
		Spec struct {
			Completions int `yaml:"completions"`
			Template    struct {
				Spec struct {
					Containers []struct {
						Args []string `yaml:"args"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	for _, b := range yamlBlocks(shardingDoc(t)) {
		dec := yaml.NewDecoder(strings.NewReader(b))
		for {
			var doc struct {
				Kind     string `yaml:"kind"`
				Metadata struct {
					Name string `yaml:"name"`
				} `yaml:"metadata"`
			}
			var node yaml.Node
			if err := dec.Decode(&node); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("a YAML block does not parse: %v", err)
			}
			if err := node.Decode(&doc); err != nil {
				t.Fatal(err)
			}
			switch doc.Metadata.Name {
			case "chaos-campaign":
				node.Decode(&job)
			case "chaos-merge":
				node.Decode(&merge)
			}
		}
	}
	if job.Kind != "Job" || job.Spec.Completions < 2 || len(job.Spec.Template.Spec.Containers) != 1 || len(merge.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("docs/sharding.md: no Indexed Job chaos-campaign and merge Job chaos-merge: %+v %+v", job, merge)
	}
	planned := map[string]int{}
	total := 0
	var stores []string
	for i := 0; i < job.Spec.Completions; i++ {
		var args []string
		for _, a := range job.Spec.Template.Spec.Containers[0].Args {
			args = append(args, strings.ReplaceAll(a, "$(JOB_COMPLETION_INDEX)", strconv.Itoa(i)))
		}
		if j := slices.Index(args, "--store"); j >= 0 {
			stores = append(stores, args[j+1])
			args[j+1] = t.TempDir()
		}
		out, code := runChaos(t, append(args, "--dry-run")...)
		if code != 0 {
			t.Fatalf("pod %d: chaos %s --dry-run exited %d:\n%s", i, strings.Join(args, " "), code, out)
		}
		for _, m := range dryRunLine.FindAllStringSubmatch(out, -1) {
			planned[m[1]]++
		}
		if m := regexp.MustCompile(`of the (\d+) runs`).FindStringSubmatch(out); m != nil {
			total, _ = strconv.Atoi(m[1])
		}
	}
	if len(planned) != total || total == 0 {
		t.Errorf("the %d pods plan %d distinct runs, the campaign has %d", job.Spec.Completions, len(planned), total)
	}
	for run, n := range planned {
		if n != 1 {
			t.Errorf("%s is planned by %d pods", run, n)
		}
	}
	margs := merge.Spec.Template.Spec.Containers[0].Args
	for _, s := range stores {
		if !slices.Contains(margs, s) {
			t.Errorf("the merge Job does not name the store %s", s)
		}
	}
	if _, err := execValidate(t, margs...); !errors.Is(err, cli.ErrValidated) {
		t.Errorf("the merge Job's arguments %q are refused: %v", margs, err)
	}
}

// dryRunLine is a planned run of a dry run: its cell and number.
var dryRunLine = regexp.MustCompile(`(?m)^\[\d+/\d+\] (.+ run \d+)/\d+ seed`)

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
