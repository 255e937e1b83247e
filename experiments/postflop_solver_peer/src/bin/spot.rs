//! postflop-solver on any spot, for `experiments/bench_flop.py`: solved with DCFR to a target
//! exploitability (checked every 10 iterations, as the library's `solve` does), one JSON line out.
//!
//!     spot BOARD POT STACK OOP_RANGE IP_RANGE BETS RAISES ADD_ALLIN MERGING TARGET_PCT [COMPRESS [RIVER_DONK]]
//!     RAYON_NUM_THREADS=2 spot Qs8h3c 200 900 '66+,...' 'QQ-22,...' '60%, e, a' '2.5x' 1.5 0.1 0.5
//!
//! `memory_bytes` is the library's own figure for its storage (f32, or 16-bit with COMPRESS = 1);
//! `ev` each player's expected share of the pot (range-weighted over its hands, as desktop-postflop
//! shows it), after `finalize`. `seconds` is the whole loop (checks and `finalize` included, as the
//! library's `solve` runs it), `iteration_seconds` the `solve_step`s alone.

use postflop_solver::*;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 11 {
        eprintln!("usage: spot BOARD POT STACK OOP_RANGE IP_RANGE BETS RAISES ADD_ALLIN MERGING TARGET_PCT [COMPRESS [RIVER_DONK]]");
        std::process::exit(2);
    }
    let board = &args[1];
    let pot: i32 = args[2].parse().unwrap();
    let stack: i32 = args[3].parse().unwrap();
    let oop: Range = args[4].parse().unwrap();
    let ip: Range = args[5].parse().unwrap();
    let sizes = BetSizeOptions::try_from((args[6].as_str(), args[7].as_str())).unwrap();
    let add_allin: f64 = args[8].parse().unwrap();
    let merging: f64 = args[9].parse().unwrap();
    let target_pct: f32 = args[10].parse().unwrap();
    let compress = args.get(11).map(|s| s == "1").unwrap_or(false);
    let river_donk = args.get(12).map(|d| DonkSizeOptions::try_from(d.as_str()).unwrap());
    let flop = flop_from_str(&board[0..6]).unwrap();
    let turn = if board.len() >= 8 { card_from_str(&board[6..8]).unwrap() } else { NOT_DEALT };
    let river = if board.len() >= 10 { card_from_str(&board[8..10]).unwrap() } else { NOT_DEALT };
    let initial_state = if river != NOT_DEALT {
        BoardState::River
    } else if turn != NOT_DEALT {
        BoardState::Turn
    } else {
        BoardState::Flop
    };
    let cards = CardConfig { range: [oop, ip], flop, turn, river };
    let config = TreeConfig {
        initial_state,
        starting_pot: pot,
        effective_stack: stack,
        rake_rate: 0.0,
        rake_cap: 0.0,
        flop_bet_sizes: [sizes.clone(), sizes.clone()],
        turn_bet_sizes: [sizes.clone(), sizes.clone()],
        river_bet_sizes: [sizes.clone(), sizes],
        turn_donk_sizes: None,
        river_donk_sizes: river_donk,
        add_allin_threshold: add_allin,
        force_allin_threshold: 0.15,
        merging_threshold: merging,
    };
    let mut game = PostFlopGame::with_config(cards, ActionTree::new(config).unwrap()).unwrap();
    let (memory, memory_compressed) = game.memory_usage();
    game.allocate_memory(compress);
    let target = pot as f32 * target_pct / 100.0;
    let start = Instant::now();
    let mut exploitability = compute_exploitability(&game);
    let mut iterations = 0;
    let mut iteration_seconds = 0.0;
    while iterations < 1000 && exploitability > target {
        let step = Instant::now();
        solve_step(&game, iterations);
        iteration_seconds += step.elapsed().as_secs_f64();
        iterations += 1;
        if iterations % 10 == 0 || iterations == 1000 {
            exploitability = compute_exploitability(&game);
        }
    }
    finalize(&mut game);
    let seconds = start.elapsed().as_secs_f64();
    let ev = postflop_solver_peer::root_evs(&mut game);
    println!(
        "{{\"seconds\": {}, \"iteration_seconds\": {}, \"iterations\": {}, \"exploitability_pct\": {}, \"memory_bytes\": {}, \"memory_bytes_compressed\": {}, \"compressed\": {}, \"ev\": [{}, {}], \"private_hands\": [{}, {}]}}",
        seconds, iteration_seconds, iterations, exploitability / pot as f32 * 100.0, memory, memory_compressed, compress,
        ev[0], ev[1], game.num_private_hands(0), game.num_private_hands(1)
    );
}
