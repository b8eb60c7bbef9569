// Package hookexec runs users' commands safely: the init, generate and
// dynamic-parameters commands of an Argo CD config-management plugin, the
// commands behind an ApplicationSet generator plugin, and addon-operator
// style hooks.
//
// A [Command] is an action object: fill in its fields and call
// [Command.Run]. The command is an argv, never a shell string: argv[0] is
// looked up in the PATH of the environment the caller gives (or, when that
// environment has no PATH, in this process's PATH), and only absolute PATH
// entries are searched, so a "." in PATH can never run a file from the
// repository being rendered. An argv[0] containing a slash is a path,
// relative to [Command.Dir]. The environment is exactly [Command.Env];
// nothing is inherited.
//
// The command runs in its own process group. When its context is cancelled,
// its context's deadline passes or [Command.Timeout] expires, the whole
// group gets SIGTERM, then SIGKILL after [Command.Grace] (5 s by default),
// as Argo CD does. When the command's main process exits, whatever it left
// running in its group is killed, so background children cannot hold the
// output pipes open and hang Run; a process that escaped the group (setsid)
// and still holds them is cut off after a short drain delay, and Run reports
// that the output may be incomplete. All signals are sent while the main
// process is still unreaped, so its process-group ID cannot have been reused.
//
// Output is bounded as it arrives: stdout beyond [Command.MaxStdout] stops
// the command with [ErrOutputTooLarge], as does stderr beyond
// [Command.StderrLimit] when set; stderr keeps only its last
// [Command.MaxStderr] bytes. [Command.Reserve] lets a server count stdout
// against a memory budget as the buffer holding it grows, and stop the
// command when the budget has no room. [Command.MaxFileSize] is the
// command's RLIMIT_FSIZE, and [Tracker.Stop] kills a request's commands
// at once for a reason Run cannot see (a server's disk budget). A command that fails yields an [*ExitError] whose message reads the
// way Argo CD's does:
//
//	`helm template . --values x.yaml` failed exit status 1: Error: open x.yaml: no such file or directory
//
// A stopped command yields an error matching [ErrTimeout] or
// [context.Canceled] with errors.Is, saying after how long it was stopped;
// a command that cannot be found, [ErrNotFound], naming the PATH searched.
//
// A [Sandbox] confines a command's access to files with Landlock: it may
// read and run what the system holds except the Hidden directories, and
// write only the Writable ones (a plugin command: its own copy of the
// repository and its temporary directory). The rules are enforced on a
// thread made for the one command, from which it is started; the rest of
// the process is never restricted. The rules are cached between commands
// and checked against the directories before each (see [Sandbox]).
// Without Landlock in the kernel, Run refuses a command with a Sandbox
// ([ErrNoSandbox]) rather than run it unconfined.
//
// A [Workspace] is a private temporary directory for the files a hook
// exchanges with its caller (addon-operator passes VALUES_PATH,
// VALUES_JSON_PATCH_PATH and friends in the environment): write the inputs,
// put [Workspace.Path] into the command's environment, read the outputs
// back with [Workspace.ReadBounded], and Close it.
//
// The package needs Linux (waitid with WNOWAIT, process groups); elsewhere
// Run returns an error matching [errors.ErrUnsupported].
package hookexec
