"""Real tables: one hand in the table's own chips (`hand.TableHand`), a policy seated at a table inside
its clock (`seat.Seat`), and the clients of the tables' protocols (`acpc`: an ACPC dealer; `chipzen`:
Chipzen's tables)."""
