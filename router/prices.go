package router

import (
	"strings"

	"github.com/omnibrain/omnibrain/config"
)

// builtinPrices are the public list prices (USD per million tokens, input
// and output, without caching discounts) of the common hosted models, so
// the daily budget counts their calls with no configuration. A model is
// matched by the longest entry its name starts with, after any provider
// prefix ("openai/", "models/"): dated versions ("gpt-4o-2024-08-06",
// "claude-3-5-sonnet-20241022") take their family's price.
var builtinPrices = map[string]config.Price{
	// OpenAI
	"gpt-5":         {InputPerMTok: 1.25, OutputPerMTok: 10},
	"gpt-5-mini":    {InputPerMTok: 0.25, OutputPerMTok: 2},
	"gpt-5-nano":    {InputPerMTok: 0.05, OutputPerMTok: 0.40},
	"gpt-4.1":       {InputPerMTok: 2, OutputPerMTok: 8},
	"gpt-4.1-mini":  {InputPerMTok: 0.40, OutputPerMTok: 1.60},
	"gpt-4.1-nano":  {InputPerMTok: 0.10, OutputPerMTok: 0.40},
	"gpt-4o":        {InputPerMTok: 2.50, OutputPerMTok: 10},
	"gpt-4o-mini":   {InputPerMTok: 0.15, OutputPerMTok: 0.60},
	"gpt-4-turbo":   {InputPerMTok: 10, OutputPerMTok: 30},
	"gpt-3.5-turbo": {InputPerMTok: 0.50, OutputPerMTok: 1.50},
	"o1":            {InputPerMTok: 15, OutputPerMTok: 60},
	"o1-mini":       {InputPerMTok: 1.10, OutputPerMTok: 4.40},
	"o3":            {InputPerMTok: 2, OutputPerMTok: 8},
	"o3-mini":       {InputPerMTok: 1.10, OutputPerMTok: 4.40},
	"o4-mini":       {InputPerMTok: 1.10, OutputPerMTok: 4.40},
	// Anthropic
	"claude-opus-4":     {InputPerMTok: 15, OutputPerMTok: 75},
	"claude-opus-4-5":   {InputPerMTok: 5, OutputPerMTok: 25},
	"claude-sonnet-4":   {InputPerMTok: 3, OutputPerMTok: 15},
	"claude-haiku-4":    {InputPerMTok: 1, OutputPerMTok: 5},
	"claude-3-7-sonnet": {InputPerMTok: 3, OutputPerMTok: 15},
	"claude-3-5-sonnet": {InputPerMTok: 3, OutputPerMTok: 15},
	"claude-3-5-haiku":  {InputPerMTok: 0.80, OutputPerMTok: 4},
	"claude-3-opus":     {InputPerMTok: 15, OutputPerMTok: 75},
	"claude-3-haiku":    {InputPerMTok: 0.25, OutputPerMTok: 1.25},
	// DeepSeek
	"deepseek-chat":     {InputPerMTok: 0.28, OutputPerMTok: 0.42},
	"deepseek-reasoner": {InputPerMTok: 0.28, OutputPerMTok: 0.42},
	// Google Gemini (OpenAI-compatible endpoint)
	"gemini-2.5-pro":        {InputPerMTok: 1.25, OutputPerMTok: 10},
	"gemini-2.5-flash":      {InputPerMTok: 0.30, OutputPerMTok: 2.50},
	"gemini-2.5-flash-lite": {InputPerMTok: 0.10, OutputPerMTok: 0.40},
	"gemini-2.0-flash":      {InputPerMTok: 0.10, OutputPerMTok: 0.40},
	"gemini-1.5-pro":        {InputPerMTok: 1.25, OutputPerMTok: 5},
	"gemini-1.5-flash":      {InputPerMTok: 0.075, OutputPerMTok: 0.30},
}

// mostExpensive is what an unknown hosted model is counted at: the
// table's highest rates, so the budget errs on the side of stopping.
var mostExpensive = func() config.Price {
	var p config.Price
	for _, q := range builtinPrices {
		p.InputPerMTok = max(p.InputPerMTok, q.InputPerMTok)
		p.OutputPerMTok = max(p.OutputPerMTok, q.OutputPerMTok)
	}
	return p
}()

// PriceSource says where a model's price comes from.
type PriceSource string

const (
	PriceConfigured PriceSource = "configured" // llm.prices
	PriceBuiltin    PriceSource = "builtin"    // the built-in table
	PriceLocal      PriceSource = "local"      // loopback or Ollama: free
	PriceUnknown    PriceSource = "unknown"    // hosted, not in the table: the most expensive known rate
)

// PriceFor is the price the router counts a provider's calls at:
// llm.prices for the model if set; free on loopback or Ollama; the
// built-in table for a hosted model it knows; the most expensive known
// rate for any other hosted model.
func PriceFor(configured map[string]config.Price, kind, baseURL, model string) (config.Price, PriceSource) {
	if p, ok := configured[model]; ok {
		return p, PriceConfigured
	}
	if kind == "ollama" || (baseURL != "" && IsLoopbackURL(baseURL)) {
		return config.Price{}, PriceLocal
	}
	if p, ok := builtinPrice(model); ok {
		return p, PriceBuiltin
	}
	return mostExpensive, PriceUnknown
}

func builtinPrice(model string) (config.Price, bool) {
	name := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	best, found := "", false
	for prefix := range builtinPrices {
		if len(prefix) > len(best) && (name == prefix || strings.HasPrefix(name, prefix+"-") || strings.HasPrefix(name, prefix+"@")) {
			best, found = prefix, true
		}
	}
	return builtinPrices[best], found
}
