package record

// Field names of the record contract (see synthpipe-records(7)): the one
// place every tool takes them from. Struct tags cannot name a constant; the
// tests of the packages with such tags check them against these.

// Prompt fields, written by tokenize-prompts.
const (
	FieldID       = "id"
	FieldMessages = "messages" // the OpenAI-style conversation up to the turn to generate
	FieldTools    = "tools"
	FieldInputIDs = "input_ids"
	// FieldPromptTokens is the length of FieldInputIDs.
	FieldPromptTokens = "prompt_tokens"
	FieldPromptText   = "prompt_text" // the rendered prompt, with tokenize-prompts --with-text
	// FieldConversationTurns is how many assistant turns a conversation
	// record asks generate --turns all for (tokenize-prompts --turns all).
	FieldConversationTurns = "conversation_turns"
	// FieldDataset names the dataset a record belongs to. run-dataset.sh
	// has tokenize-prompts write it (--dataset) on every record of a
	// dataset.
	FieldDataset = "dataset"
	// FieldThinking and FieldReasoningEffort hold the thinking choice
	// (tokenize-prompts --thinking; see lib/thinking).
	FieldThinking        = "thinking"         // true or false
	FieldReasoningEffort = "reasoning_effort" // a level, with --thinking effort:...
)

// Source fields: the shapes tokenize-prompts reads a prompt from besides
// FieldMessages, and FieldText, a prompt already rendered.
const (
	FieldConversations = "conversations" // ShareGPT or SpecForge turns; also to-train --format specforge's output
	FieldPrompt        = "prompt"
	FieldSystem        = "system"
	FieldInstruction   = "instruction" // Alpaca, with FieldInput, FieldOutput and FieldHistory
	FieldInput         = "input"
	FieldOutput        = "output"
	FieldHistory       = "history"
)

// Response fields, added by generate.
const (
	FieldOutputIDs          = "output_ids"
	FieldText               = "text" // the answer; on a prompt, the prompt already rendered
	FieldReasoning          = "reasoning"
	FieldReasoningDetails   = "reasoning_details"
	FieldToolCalls          = "tool_calls"
	FieldCompletionTokens   = "completion_tokens"
	FieldUsage              = "usage"
	FieldFinishReason       = "finish_reason"
	FieldNativeFinishReason = "native_finish_reason" // the backend's own finish reason
	FieldError              = "error"
	FieldGen                = "gen" // who made the answer: backend, model, endpoint, params
)

// Samples (generate --samples N): sample k of a prompt carries FieldSample
// (k) and FieldPromptID (the prompt's id); see SampleID.
const (
	FieldSample   = "sample"
	FieldPromptID = "prompt_id"
)

// Members of a regenerated conversation (generate --turns all; see
// synthpipe-records(7), CONVERSATIONS).
const (
	FieldTurns              = "turns"
	FieldEnded              = "ended"
	FieldConversation       = "conversation"
	FieldConversationTokens = "conversation_tokens"
)

// Training records, written by to-train --format tokens and turns.
const (
	FieldLossMask = "loss_mask"
	FieldTurn     = "turn" // which turn of its conversation (--format turns)
)
