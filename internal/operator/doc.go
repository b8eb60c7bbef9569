// Package operator is strata's addon operator engine: it runs flant
// addon-operator's modules (Helm charts with hooks and enabled scripts) and
// global hooks the way addon-operator does, over small backend interfaces
// (the config store, the release store, the object source of kubernetes
// bindings) so that the local backends of part 1 and the cluster backends
// of part 2 plug in alike.
//
// # Lifecycle
//
// Engine.Run follows addon-operator's LIFECYCLE-STEPS, every step a task
// in the queues of package queue:
//
//  1. global onStartup hooks, by order then name;
//  2. the global hooks' kubernetes bindings start: a Synchronization run
//     per binding with executeHookOnSynchronization (in main when it
//     waits for synchronization, else in its queue), then schedules;
//  3. 'reload all modules': global beforeAll hooks;
//  4. module discovery: the merged <key>Enabled flags, then enabled
//     scripts in module order; three lists: modules to run, to delete, and
//     releases to purge;
//  5. a 'module run' for each enabled module, the modules of one order in
//     parallel: onStartup (the first time), kubernetes Synchronization,
//     beforeHelm, Helm (rendered, written to the release store only when
//     the manifests' checksum changed, the release is not deployed, or
//     its resources are missing), afterHelm — whose values change runs
//     the module again;
//  6. a 'module delete' for each disabled module that has a release:
//     beforeDeleteHelm, the release deleted, afterDeleteHelm;
//  7. a 'module purge' for each release without a module;
//  8. global afterAll hooks — whose values change reloads all again.
//
// Then it reacts (steps 9–16): kubernetes and schedule events run hooks
// in their queues (repeated runs of one hook compacted); a global hook
// that changed global values or *Enabled flags reloads all modules; a
// module hook that changed its module's values runs that module; a config
// store change reloads all (global section or *Enabled flags) or runs the
// changed modules; a release whose resources went missing runs its
// module. The first converge done makes /readyz ready.
//
// Each kind of task is a type in a file of its own (task_*.go: hookRun,
// moduleRun, parallelRun, moduleDelete, modulePurge, reloadAll, discover,
// convergeDone, enableGlobalBindings, reloadGlobalHooks) holding what it
// works on, with its Kind, its description and its run; the queues' handler
// runs it through the job interface (tasks.go).
//
// A failed task stays at the head of its queue and is retried with
// backoff; Render (strata operator render) instead stops at the first
// failure.
package operator
