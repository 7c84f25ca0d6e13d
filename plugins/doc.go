// Package plugins gives omnibrain tools from outside, each confirmed by
// the owner when added (`omnibrain plugin add`), with the sha256 of the
// manifest the owner saw pinned: a changed manifest is not used until
// the owner confirms it again.
//
// Two kinds: chat-tools plugins in Omi's format (a manifest URL, tools
// that are HTTP endpoints receiving {"uid","app_id","tool_name",...}
// and answering {"result"} or {"error"}), and local plugins (a folder
// with plugin.yaml and a program spoken to with JSON over stdin/stdout,
// run in the sandbox of plugins/sandbox).
//
// Every tool is outgoing — it only proposes a plugin_action the owner
// approves, executed once with an idempotency key — unless the owner
// let it read. A read call runs at once, with only its schema's
// arguments, short; one whose arguments carry outside text of the run
// that the owner did not give is proposed instead. Every answer reaches
// the model as untrusted data. Local plugins can also bring knowledge
// files, indexed as documents.
package plugins
