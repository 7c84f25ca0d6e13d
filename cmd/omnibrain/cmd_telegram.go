package main

import (
	"context"
	"fmt"
	"time"
)

func telegramCommand() *command {
	return &command{
		name:    "telegram",
		args:    "pair",
		summary: "pair the Telegram bot with you: prints a one-time code to send to the bot as /start CODE",
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 1 || args[0] != "pair" {
				return usagef("usage: omnibrain telegram pair")
			}
			c, err := e.api(ctx)
			if err != nil {
				return err
			}
			res, err := c.TelegramPair(ctx)
			if err != nil {
				return apiError(err)
			}
			// A note means the code cannot reach anyone yet (no bot token):
			// a code to send to no bot is not a success, and is not shown,
			// with or without --json; the note says to pair again once the
			// bot runs.
			if res.Note != "" {
				return fmt.Errorf("telegram pair: %s", res.Note)
			}
			if e.json {
				return e.printJSON(res)
			}
			e.printf("Send this message to your bot in Telegram within %s:\n\n    /start %s\n\n", time.Until(res.Expires).Round(time.Minute), res.Code)
			e.printf("The code works once. Whoever sends it becomes the only person the bot answers.\n")
			return nil
		},
	}
}
