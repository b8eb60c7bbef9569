// Package manifest reads and writes Kubernetes manifest streams. It reads
// the output of a config management plugin's generate command, files of
// objects (the layers controller's, an ApplicationSet's, the operator's
// local cluster), a hook's patch output and the manifests a module's
// release rendered; it writes a plugin's manifests as the stream
// `strata cmp generate` prints (Encoder, whose fast paths document.Codecs
// switches off). It is strata's one splitter of manifest streams: code
// that must cut a stream at its "---" lines uses Split, SplitReader or
// SplitRendered, not a splitter of its own.
//
// A stream is a YAML stream (documents separated by "---" lines, or ended
// by "..."), or a JSON stream (JSON values one after another). Parse cuts
// it into documents, drops the empty ones (nothing but comments, white
// space or null), and parses each into a tree of package document, with
// its positions counted in lines of the whole stream, within Limits
// (document count, stream size, nodes, depth). Errors are
// *document.LoadErrors naming the source and the line of the stream (inside
// a document, a line of the whole stream, not of the document). Each
// Document carries its index among the non-empty documents, counted from 1,
// for the caller's own errors about it ("document 2 at items[1] has no
// kind").
//
// Two other splitters cut streams by other tools' rules, for who must
// read as those tools do: SplitReader as Kubernetes' YAML reader (Argo
// CD's repo-server reading helm template's output, Helm reading a values
// file of several documents), SplitRendered as Helm cuts the files its
// templates rendered before sorting them. Each is held to the tool's own
// code by a differential test and a fuzzer.
//
// ListItems is the rule of Argo CD's repo-server for lists of objects: an
// object whose items field is a list holds the objects of its items (the
// repo-server unpacks any such object, whatever its kind; `kind: List` and
// the typed lists such as ConfigMapList are the usual ones), and an object
// whose items is null, with neither spec nor status, is an empty list.
// Callers unpack lists (and lists inside lists, within a bound of their own)
// with it, since what an item must be differs: a CMP's output needs
// apiVersion and kind on every item, a file of objects skips what it does
// not read.
package manifest
