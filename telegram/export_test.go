package telegram

// telegramHash exposes the pairing-code hash to the tests.
var HashCode = hashCode
