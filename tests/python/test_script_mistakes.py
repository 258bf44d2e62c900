"""test_script_mistakes.py: a user's mistakes with the scripts other than the log tools and sweep.sh
(which their own tests cover): python/draw_net.py, the scripts/bench shell scripts and their Python
helpers, fuzz.sh and gpu_check.sh. Each mistake is one line on stderr naming what to fix, exit status 1
(2 for draw_net.py's command line), no traceback, and nothing written or started. The shell scripts run
against a stand-in build folder and with cmake, apt-get and sudo replaced by stubs that fail loudly, so
a mistake that slipped through could neither build nor install anything."""
import os
import stat
import subprocess
import sys

import pytest

from conftest import REPO, TINY, write_text

BENCH = REPO / 'scripts' / 'bench'
DRAW_NET = REPO / 'python' / 'draw_net.py'


def one_line(run, returncode=1):
    """The run's only stderr line, once its exit status is checked."""
    assert run.returncode == returncode, (run.returncode, run.stderr)
    assert 'Traceback' not in run.stderr
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    return lines[0]


# ------------------------------------------------------------------------------------------------
# python/draw_net.py

def draw_net(*args):
    return subprocess.run([sys.executable, str(DRAW_NET), *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def test_draw_net_mistakes(tmp_path):
    net = write_text(tmp_path, 'tiny.prototxt', TINY)
    line = one_line(draw_net(net, tmp_path / 'x.png', '--rankdir', 'XY'), returncode=2)
    assert line.startswith("draw_net.py: error: argument --rankdir: invalid choice: 'XY' (choose from 'LR', 'TB', "
                           "'RL', 'BT') (usage: draw_net.py [-h]")
    assert one_line(draw_net(), returncode=2).startswith(
        'draw_net.py: error: the following arguments are required: input_net_proto_file, output_image_file '
        '(usage: draw_net.py [-h]')
    assert one_line(draw_net(net, tmp_path)) == \
        f'draw_net.py: error: {tmp_path} is a directory; name the image file, e.g. {tmp_path}/net.png'
    assert one_line(draw_net(net, tmp_path / 'no_dir' / 'x.png')) == \
        f'draw_net.py: error: cannot write {tmp_path}/no_dir/x.png: no directory {tmp_path}/no_dir'
    empty = tmp_path / 'empty.prototxt'
    empty.write_text('')
    assert one_line(draw_net(empty, tmp_path / 'x.png')) == \
        f'draw_net.py: error: {empty} holds no `layer` entries: nothing to draw'
    binary = tmp_path / 'weights.caffemodel'
    binary.write_bytes(b'\x0a\x05lenet\xff\xfe')
    assert one_line(draw_net(binary, tmp_path / 'x.png')) == \
        f'draw_net.py: error: {binary} is not a text prototxt (byte 7 is not UTF-8)'
    assert sorted(os.listdir(tmp_path)) == ['empty.prototxt', 'tiny.prototxt', 'weights.caffemodel']


def test_draw_net_accepts_rankdir_in_any_case(tmp_path):
    net = write_text(tmp_path, 'tiny.prototxt', TINY)
    run = draw_net(net, tmp_path / 'tiny.raw', '--rankdir', 'tb')
    assert run.returncode == 0, run.stderr
    assert 'rankdir=TB' in (tmp_path / 'tiny.raw').read_text()
    assert sorted(os.listdir(tmp_path)) == ['tiny.prototxt', 'tiny.raw']  # no temporary left


# ------------------------------------------------------------------------------------------------
# scripts/bench/*.sh, fuzz.sh and gpu_check.sh

@pytest.fixture
def stand_ins(tmp_path):
    """An environment whose build folder holds a trainer that only fails and whose cmake, apt-get and
    sudo are stubs that fail (exit 97) naming themselves."""
    stubs = tmp_path / 'stubs'
    stubs.mkdir()
    for name in ('cmake', 'apt-get', 'sudo', 'mpirun'):
        path = stubs / name
        path.write_text(f'#!/bin/sh\necho "stub {name} ran: $*" >&2\nexit 97\n')
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    build = tmp_path / 'build'
    (build / 'tools').mkdir(parents=True)
    (build / 'CMakeCache.txt').write_text('CMAKE_BUILD_TYPE:STRING=Release\n')
    trainer = build / 'tools' / 'trainer'
    trainer.write_text('#!/bin/sh\necho "stub trainer ran" >&2\nexit 97\n')
    trainer.chmod(0o755)
    return dict(os.environ, PATH=f'{stubs}:{os.environ["PATH"]}', CORTADO_BUILD_DIR=str(build), BUILD='0',
                TRAINER=str(trainer))


def script(env, path, *args, **settings):
    return subprocess.run(['bash', str(path), *map(str, args)], env=dict(env, **settings), capture_output=True,
                          text=True, timeout=120, cwd=REPO)


ENVIRONMENT_ONLY = {'cpu_lenet': 'ITERS, WARMUP, THREADS', 'cpu_nets': 'THREADS, ITERS, NETS and the others',
                    'data': 'THREADS, IMAGES', 'memory': 'THREADS, ITERS, NETS',
                    'scaling': 'NETS, SCALE, TRAINER, BUILD', 'sweep': 'NETS, BATCHES, THREADS, GPUS, ITERATIONS, OUT'}


@pytest.mark.parametrize('name', sorted(ENVIRONMENT_ONLY))
def test_bench_scripts_take_no_arguments(stand_ins, name):
    run = script(stand_ins, BENCH / f'{name}.sh', '--threads', '4')
    assert one_line(run) == (f"error: {name}.sh takes no arguments, not '--threads': set {ENVIRONMENT_ONLY[name]} "
                             'in the environment (see --help)')
    run = script(stand_ins, BENCH / f'{name}.sh', '--help')
    assert run.returncode == 0 and run.stdout.startswith(f'{name}.sh — ') and run.stderr == ''
    assert f'Usage: scripts/bench/{name}.sh        (no arguments; --help prints this)' in run.stdout


@pytest.mark.parametrize('name, settings, message', [
    ('cpu_lenet', {'THREADS': 'two'}, "THREADS must be a positive integer, not 'two'"),
    ('cpu_lenet', {'ITERS': '1e3'}, "ITERS must be a positive integer, not '1e3'"),
    ('cpu_lenet', {'WARMUP': '-100'}, "WARMUP must be a non-negative integer, not '-100'"),
    ('data', {'IMAGES': 'many'}, "IMAGES must be a positive integer, not 'many'"),
    ('data', {'THREADS': ' '}, 'THREADS is empty: give at least one thread count (or leave it unset)'),
    ('data', {'THREADS': '1 x'}, "THREADS takes positive integers, not 'x'"),
    ('scaling', {'NETS': 'lenet vgg'}, "unknown net 'vgg' in NETS (choose from lenet cifar10_quick resnet50)"),
])
def test_bench_settings_are_checked_before_anything_runs(stand_ins, name, settings, message):
    assert one_line(script(stand_ins, BENCH / f'{name}.sh', **settings)) == f'error: {message}'


@pytest.mark.parametrize('settings, message', [
    ({'ROUNDS': 'three'}, "ROUNDS must be a positive integer, not 'three'"),
    ({'NETS': 'lenet vgg'}, "unknown net 'vgg' in NETS (lenet cifar10_quick googlenet resnet50)"),
])
def test_versions_settings_are_checked_before_anything_runs(stand_ins, settings, message):
    other = stand_ins['TRAINER']
    assert one_line(script(stand_ins, BENCH / 'versions.sh', other, **settings)) == f'error: {message}'


@pytest.mark.parametrize('args, message', [
    (['--runs'], '--runs needs a value (see the head of scripts/fuzz.sh)'),
    (['--runs', 'many'], "--runs needs a whole number, not 'many' (see the head of scripts/fuzz.sh)"),
    (['--seed', '-1'], "--seed needs a whole number, not '-1' (see the head of scripts/fuzz.sh)"),
    (['--jobs', '0'], '--jobs needs at least 1'),
    (['lmdb', 'no_such_harness'], "no harness 'no_such_harness' (the harnesses: "),
])
def test_fuzz_arguments_are_checked_before_anything_installs_or_builds(stand_ins, args, message):
    assert one_line(script(stand_ins, REPO / 'scripts' / 'fuzz.sh', *args)).startswith(f'error: {message}')


def test_gpu_check_refuses_words_after_pack_and_dry_run(stand_ins):
    for word in ('pack', '--dry-run'):
        assert one_line(script(stand_ins, REPO / 'scripts' / 'gpu_check.sh', word, 'quick')) == \
            f"gpu_check.sh: {word} takes nothing after it, not 'quick'"


# ------------------------------------------------------------------------------------------------
# scripts/bench's Python helpers

def helper(name, *args):
    return subprocess.run([sys.executable, str(BENCH / name), *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def test_make_train_net_mistakes(tmp_path):
    deploy = REPO / 'models' / 'mnist' / 'lenet.prototxt'
    assert one_line(helper('make_train_net.py', tmp_path / 'none.prototxt', 2, tmp_path / 'out.prototxt')) == \
        f'make_train_net.py: cannot read {tmp_path}/none.prototxt: No such file or directory'
    binary = tmp_path / 'weights.caffemodel'
    binary.write_bytes(b'\x0a\x05lenet\xff')
    assert one_line(helper('make_train_net.py', binary, 2, tmp_path / 'out.prototxt')) == \
        f'make_train_net.py: {binary} is not a text prototxt (byte 7 is not UTF-8)'
    assert one_line(helper('make_train_net.py', deploy, 2, tmp_path / 'no_dir' / 'out.prototxt')) == \
        f'make_train_net.py: cannot write {tmp_path}/no_dir/out.prototxt: No such file or directory'
    assert sorted(os.listdir(tmp_path)) == ['weights.caffemodel']
    run = helper('make_train_net.py', deploy, 2, tmp_path / 'out.prototxt')
    assert run.returncode == 0, run.stderr
    assert sorted(os.listdir(tmp_path)) == ['out.prototxt', 'weights.caffemodel']


def test_data_reference_usage():
    pytest.importorskip('cv2')
    usage = 'usage: data_reference.py make-images DIR COUNT | mnist IDX_IMAGES | jpeg LIST ROOT'
    for args in ([], ['mnist'], ['jpeg', 'list.txt'], ['resize', 'a', 'b']):
        assert one_line(helper('data_reference.py', *args)) == usage
    assert one_line(helper('data_reference.py', 'make-images', '/tmp/x', 'many')) == \
        "data_reference.py: COUNT must be a number of images, not 'many'"
