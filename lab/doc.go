// Package lab is the lab as a whole; its parts are the packages below it,
// each importing only those listed before it:
//
//   - lab/service: the service table, one value per service;
//   - lab/plan: the options a user chooses and the plan made of them with
//     the host's facts (GPUs, sizing, images, ports, a joining host's plan),
//     and the values the plan carries (credentials, join bundle, URLs);
//   - lab/state: the state directory, where the plan, credentials and
//     records are written and read back, and the clients of a running lab;
//   - lab/render: the plan as a Compose project and the files beside it;
//   - lab/nextstep: Commands, the one writer of the command lines hints name;
//   - lab/status: the running lab read back from the engine and Ray;
//   - lab/lifecycle: bringing it up, joining, taking down, workers, logs;
//   - lab/exercise, lab/verify: what runs on a lab and judges it;
//   - lab/backup: the lab's bucket, workspace and records saved and restored;
//   - lab/fleet: verify and backup on many students' hosts over SSH.
//
// docs/packages.md is the map, kept true by internal/arch's test.
package lab
