//! postflop-solver on a river spot with node locking: the strategies in LOCKFILE are locked
//! (`lock_current_strategy`) before the solve, then a fixed number of DCFR iterations, one JSON
//! line out.
//!
//!     lock BOARD POT STACK OOP_RANGE IP_RANGE BETS RAISES ITERATIONS LOCKFILE
//!     RAYON_NUM_THREADS=1 lock Td9d6hQc3s 200 900 'AA,KK,QQ,AK,AQ' 'JJ,TT,99,AJ' '60%,a' '2.5x' 200 lock.json
//!
//! BOARD is a 5-card river board. The tree is `spot`'s, with the same sizes for both players,
//! add_allin_threshold 0.0, force_allin_threshold 0.15, merging_threshold 0.0 and no donk sizes.
//! LOCKFILE:
//!
//!     {"nodes": [{"line": ["x", "b120"], "actions": ["f", "c", "r300"],
//!                 "hands": ["AsKd", "QhQc"], "strategy": [[0.2, 0.5, 0.3], [0, 1, 0]]}]}
//!
//! `line`: the actions from the root to the locked node; `actions`: the node's actions (as a set:
//! they must be exactly the node's) in the order of each `strategy` row; one row per hand of
//! `hands`. Tokens: x check, c call, f fold, bN bet, rN raise, aN all-in, N the chips the acting
//! player has put in on this street after the action (postflop-solver's amounts). A hand is two
//! cards in either order. The acting player's hands that are not listed, or whose row has no
//! positive entry, stay unlocked (the library's rule); listed hands that the player does not hold
//! (not in the range, or blocked by the board) are reported on stderr and skipped. A line or
//! action that is not in the tree exits with status 2.
//!
//! `exploitability_pct` is `compute_exploitability` (its best responses keep the locks) before
//! `finalize`, in % of the pot; `ev` each player's expected share of the pot after `finalize`, as
//! `spot` computes it; `locked_hands` the (node, hand) pairs locked, summed over the nodes.

use postflop_solver::*;
use serde_json::Value;
use std::collections::HashMap;

fn token(action: &Action) -> String {
    match action {
        Action::Check => "x".to_string(),
        Action::Call => "c".to_string(),
        Action::Fold => "f".to_string(),
        Action::Bet(n) => format!("b{n}"),
        Action::Raise(n) => format!("r{n}"),
        Action::AllIn(n) => format!("a{n}"),
        other => format!("{other:?}"),
    }
}

fn fail(message: String) -> ! {
    eprintln!("lock: {message}");
    std::process::exit(2);
}

fn strings(value: &Value, what: &str) -> Vec<String> {
    value
        .as_array()
        .unwrap_or_else(|| fail(format!("{what} is not an array")))
        .iter()
        .map(|v| v.as_str().unwrap_or_else(|| fail(format!("{what} holds a non-string"))).to_string())
        .collect()
}

/// A hand string ('AsKd') as an unordered card pair (smaller id first).
fn hand_key(hand: &str) -> (Card, Card) {
    let cards = (hand.len() == 4 && hand.is_ascii())
        .then(|| (card_from_str(&hand[0..2]), card_from_str(&hand[2..4])))
        .and_then(|(a, b)| Some((a.ok()?, b.ok()?)))
        .filter(|(a, b)| a != b)
        .unwrap_or_else(|| fail(format!("bad hand {hand:?}")));
    (cards.0.min(cards.1), cards.0.max(cards.1))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 10 {
        eprintln!("usage: lock BOARD POT STACK OOP_RANGE IP_RANGE BETS RAISES ITERATIONS LOCKFILE");
        std::process::exit(2);
    }
    let board = &args[1];
    if board.len() != 10 {
        fail(format!("BOARD must be a 5-card river board, got {board:?}"));
    }
    let pot: i32 = args[2].parse().unwrap();
    let stack: i32 = args[3].parse().unwrap();
    let oop: Range = args[4].parse().unwrap();
    let ip: Range = args[5].parse().unwrap();
    let sizes = BetSizeOptions::try_from((args[6].as_str(), args[7].as_str())).unwrap();
    let iterations: u32 = args[8].parse().unwrap();
    let lockfile = std::fs::read_to_string(&args[9])
        .unwrap_or_else(|e| fail(format!("cannot read {}: {e}", args[9])));
    let lock: Value =
        serde_json::from_str(&lockfile).unwrap_or_else(|e| fail(format!("bad JSON in {}: {e}", args[9])));
    let nodes = lock
        .get("nodes")
        .and_then(Value::as_array)
        .unwrap_or_else(|| fail("LOCKFILE has no \"nodes\" array".to_string()));

    let flop = flop_from_str(&board[0..6]).unwrap();
    let turn = card_from_str(&board[6..8]).unwrap();
    let river = card_from_str(&board[8..10]).unwrap();
    let cards = CardConfig { range: [oop, ip], flop, turn, river };
    let config = TreeConfig {
        initial_state: BoardState::River,
        starting_pot: pot,
        effective_stack: stack,
        rake_rate: 0.0,
        rake_cap: 0.0,
        flop_bet_sizes: [sizes.clone(), sizes.clone()],
        turn_bet_sizes: [sizes.clone(), sizes.clone()],
        river_bet_sizes: [sizes.clone(), sizes],
        turn_donk_sizes: None,
        river_donk_sizes: None,
        add_allin_threshold: 0.0,
        force_allin_threshold: 0.15,
        merging_threshold: 0.0,
    };
    let mut game = PostFlopGame::with_config(cards, ActionTree::new(config).unwrap()).unwrap();
    game.allocate_memory(false);

    let mut locked_hands = 0usize;
    for (k, node) in nodes.iter().enumerate() {
        let field = |name: &str| node.get(name).unwrap_or_else(|| fail(format!("node {k} has no {name:?}")));
        let line = strings(field("line"), "line");
        let actions = strings(field("actions"), "actions");
        let hands = strings(field("hands"), "hands");
        let rows = field("strategy")
            .as_array()
            .unwrap_or_else(|| fail(format!("node {k}: strategy is not an array")));
        if rows.len() != hands.len() {
            fail(format!("node {k}: {} strategy rows for {} hands", rows.len(), hands.len()));
        }

        // walk the line
        game.back_to_root();
        for (depth, tok) in line.iter().enumerate() {
            if game.is_terminal_node() || game.is_chance_node() {
                fail(format!("node {k}: line {:?} leaves the river's decision nodes", &line[..=depth]));
            }
            let available: Vec<String> = game.available_actions().iter().map(token).collect();
            match available.iter().position(|a| a == tok) {
                Some(i) => game.play(i),
                None => fail(format!(
                    "node {k}: token {tok:?} after {:?} not in [{}]",
                    &line[..depth],
                    available.join(" ")
                )),
            }
        }
        if game.is_terminal_node() || game.is_chance_node() {
            fail(format!("node {k}: line {line:?} ends at a terminal node"));
        }

        // the node's actions, as a set, and the JSON's order mapped to the library's
        let available: Vec<String> = game.available_actions().iter().map(token).collect();
        let mut sorted_json = actions.clone();
        let mut sorted_lib = available.clone();
        sorted_json.sort();
        sorted_lib.sort();
        if sorted_json != sorted_lib || {
            sorted_json.dedup();
            sorted_json.len() != actions.len()
        } {
            fail(format!(
                "node {k}: actions [{}] are not the node's [{}]",
                actions.join(" "),
                available.join(" ")
            ));
        }
        let to_lib: Vec<usize> =
            actions.iter().map(|a| available.iter().position(|b| b == a).unwrap()).collect();

        // the strategy in the library's layout: strategy[action * num_hands + hand]
        let player = game.current_player();
        let num_hands = game.num_private_hands(player);
        let num_actions = available.len();
        let index: HashMap<(Card, Card), usize> = game
            .private_cards(player)
            .iter()
            .enumerate()
            .map(|(i, &(a, b))| ((a.min(b), a.max(b)), i))
            .collect();
        let mut strategy = vec![0.0f32; num_actions * num_hands];
        let mut locked = vec![false; num_hands];
        for (hand, row) in hands.iter().zip(rows) {
            let row: Vec<f32> = row
                .as_array()
                .filter(|r| r.len() == num_actions)
                .and_then(|r| r.iter().map(|v| v.as_f64().map(|x| x as f32)).collect())
                .unwrap_or_else(|| fail(format!("node {k}: row of {hand} is not {num_actions} numbers")));
            let Some(&h) = index.get(&hand_key(hand)) else {
                eprintln!("lock: node {k}: player {player} does not hold {hand}; skipped");
                continue;
            };
            for (j, &p) in row.iter().enumerate() {
                strategy[to_lib[j] * num_hands + h] = p;
            }
            locked[h] = row.iter().any(|&p| p > 0.0);
        }
        game.lock_current_strategy(&strategy);
        locked_hands += locked.iter().filter(|&&l| l).count();
    }
    game.back_to_root();

    for i in 0..iterations {
        solve_step(&game, i);
    }
    let exploitability = compute_exploitability(&game);
    finalize(&mut game);
    let ev = postflop_solver_peer::root_evs(&mut game);
    println!(
        "{{\"ev\": [{}, {}], \"exploitability_pct\": {}, \"iterations\": {}, \"locked_nodes\": {}, \"locked_hands\": {}, \"private_hands\": [{}, {}]}}",
        ev[0], ev[1], exploitability / pot as f32 * 100.0, iterations, nodes.len(), locked_hands,
        game.num_private_hands(0), game.num_private_hands(1)
    );
}
