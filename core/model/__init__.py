"""Messages and conversations: the data every loader makes and every layer reads."""
