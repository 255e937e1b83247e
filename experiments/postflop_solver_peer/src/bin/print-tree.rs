//! postflop-solver's action tree for a spot, printed one decision node a line, for
//! `tests/poker/subgame/test_tree_options.py`: the betting line that leads to the node (chance
//! nodes are left out: the betting is the same after every card) and the node's actions.
//!
//!     print-tree STREET POT STACK BETS RAISES ADD_ALLIN FORCE_ALLIN MERGING [DONK]
//!     print-tree flop 200 900 '60%, e, a' '2.5x' 1.5 0.15 0.1 > tree.txt
//!
//! Tokens: X check, C call, F fold, B<n> bet, R<n> raise, A<n> all-in; n is the amount the player
//! has put in this round after the action (postflop-solver's amounts).

use postflop_solver::*;

fn token(action: &Action) -> String {
    match action {
        Action::Check => "X".to_string(),
        Action::Call => "C".to_string(),
        Action::Fold => "F".to_string(),
        Action::Bet(n) => format!("B{n}"),
        Action::Raise(n) => format!("R{n}"),
        Action::AllIn(n) => format!("A{n}"),
        other => format!("{other:?}"),
    }
}

fn walk(tree: &mut ActionTree, path: &mut Vec<String>, out: &mut Vec<String>) {
    if tree.is_terminal_node() {
        return;
    }
    let actions = tree.available_actions().to_vec();
    let names: Vec<String> = actions.iter().map(token).collect();
    out.push(format!("{}: {}", path.join(" "), names.join(" ")));
    for (action, name) in actions.iter().zip(names) {
        tree.play(*action).unwrap();
        path.push(name);
        walk(tree, path, out);
        path.pop();
        tree.undo().unwrap();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 9 {
        eprintln!("usage: print-tree STREET POT STACK BETS RAISES ADD_ALLIN FORCE_ALLIN MERGING [DONK]");
        std::process::exit(2);
    }
    let sizes = BetSizeOptions::try_from((args[4].as_str(), args[5].as_str())).unwrap();
    let donk = args.get(9).map(|d| DonkSizeOptions::try_from(d.as_str()).unwrap());
    let config = TreeConfig {
        initial_state: match args[1].as_str() {
            "flop" => BoardState::Flop,
            "turn" => BoardState::Turn,
            _ => BoardState::River,
        },
        starting_pot: args[2].parse().unwrap(),
        effective_stack: args[3].parse().unwrap(),
        rake_rate: 0.0,
        rake_cap: 0.0,
        flop_bet_sizes: [sizes.clone(), sizes.clone()],
        turn_bet_sizes: [sizes.clone(), sizes.clone()],
        river_bet_sizes: [sizes.clone(), sizes],
        turn_donk_sizes: donk.clone(),
        river_donk_sizes: donk,
        add_allin_threshold: args[6].parse().unwrap(),
        force_allin_threshold: args[7].parse().unwrap(),
        merging_threshold: args[8].parse().unwrap(),
    };
    let mut tree = ActionTree::new(config).unwrap();
    let mut out = Vec::new();
    walk(&mut tree, &mut Vec::new(), &mut out);
    println!("{}", out.join("\n"));
}
