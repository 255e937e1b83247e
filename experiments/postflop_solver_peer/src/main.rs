//! postflop-solver on `experiments/bench_subgame.py`'s spot: flop Td9d6h, turn Qc (river 3s for the
//! river spot), pot 200, effective stack 900, bets "60%, e, a" and raises "2.5x" on every street, a
//! river donk bet of 50%, full ranges, DCFR to 0.5% of the pot (exploitability checked every 10
//! iterations).
//!
//!     postflop-solver-peer turn|river
//!
//! The loop is the library's `solve`, step for step (a check before the first iteration and after
//! every tenth, `finalize` at the end), written out with the library's public `solve_step`,
//! `compute_exploitability` and `finalize` so that the checks are timed apart from the iterations.
//! One JSON line: `seconds` (the whole loop, as `solve` takes it), `iteration_seconds` (the
//! iterations alone), `check_seconds` (the checks and `finalize`), `iterations`, the exploitability
//! in % of the pot, and the library's uncompressed memory figure in bytes.

use postflop_solver::*;
use std::time::Instant;

fn main() {
    let street = std::env::args().nth(1).unwrap_or_else(|| "turn".to_string());
    let full: Range = "22+,A2+,K2+,Q2+,J2+,T2+,92+,82+,72+,62+,52+,42+,32".parse().unwrap();
    let river = match street.as_str() {
        "turn" => NOT_DEALT,
        "river" => card_from_str("3s").unwrap(),
        _ => {
            eprintln!("usage: postflop-solver-peer turn|river");
            std::process::exit(2);
        }
    };
    let cards = CardConfig {
        range: [full, full],
        flop: flop_from_str("Td9d6h").unwrap(),
        turn: card_from_str("Qc").unwrap(),
        river,
    };
    let sizes = BetSizeOptions::try_from(("60%, e, a", "2.5x")).unwrap();
    let config = TreeConfig {
        initial_state: if river == NOT_DEALT { BoardState::Turn } else { BoardState::River },
        starting_pot: 200,
        effective_stack: 900,
        rake_rate: 0.0,
        rake_cap: 0.0,
        flop_bet_sizes: [sizes.clone(), sizes.clone()],
        turn_bet_sizes: [sizes.clone(), sizes.clone()],
        river_bet_sizes: [sizes.clone(), sizes],
        turn_donk_sizes: None,
        river_donk_sizes: Some(DonkSizeOptions::try_from("50%").unwrap()),
        add_allin_threshold: 1.5,
        force_allin_threshold: 0.15,
        merging_threshold: 0.1,
    };
    let mut game = PostFlopGame::with_config(cards, ActionTree::new(config).unwrap()).unwrap();
    let memory = game.memory_usage().0;
    game.allocate_memory(false);
    let target = 200.0 * 0.005;
    let (mut iteration_seconds, mut check_seconds) = (0.0, 0.0);
    let start = Instant::now();
    let mut exploitability = compute_exploitability(&game);
    check_seconds += start.elapsed().as_secs_f64();
    let mut iterations = 0;
    while iterations < 1000 && exploitability > target {
        let step = Instant::now();
        solve_step(&game, iterations);
        iteration_seconds += step.elapsed().as_secs_f64();
        iterations += 1;
        if iterations % 10 == 0 || iterations == 1000 {
            let check = Instant::now();
            exploitability = compute_exploitability(&game);
            check_seconds += check.elapsed().as_secs_f64();
        }
    }
    let check = Instant::now();
    finalize(&mut game);
    check_seconds += check.elapsed().as_secs_f64();
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "{{\"street\": \"{}\", \"seconds\": {}, \"iteration_seconds\": {}, \"check_seconds\": {}, \"iterations\": {}, \"exploitability_pct\": {}, \"memory_bytes\": {}}}",
        street,
        seconds,
        iteration_seconds,
        check_seconds,
        iterations,
        exploitability / 200.0 * 100.0,
        memory
    );
}
