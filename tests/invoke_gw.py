#!/usr/bin/env python3
# invoke_gw.py - a stand-in FaaS gateway for tests/69-invoke.bats: what
# spirt-invoke calls, in front of a spirt-grad -F stdio run per invocation
# (no OpenFaaS or Lambda can be installed here).
#
#   invoke_gw.py DIR ADDR CMD...
#
# Serves on ADDR (a numeric address; a free port, written to DIR/port) and
# answers every POST as MODE (env) says:
#   http     as OpenFaaS's classic watchdog: CMD runs with Http_Method=POST
#            and the body on its standard input; its standard output is
#            the answer, 200 when it exits 0, else spirt-grad's status for
#            its code (400, 422, 404, 503, 500)
#   lambda   as Lambda's Invoke API: only POST
#            /2015-03-31/functions/$NAME/invocations (else 404 and
#            Lambda's ResourceNotFoundException) with X-Amz-Invocation-Type
#            RequestResponse (else 400); CMD runs with the event as its
#            operand (spirt-grad -F stdio reads JSON there); 200 with its
#            output, or for a failure 200, X-Amz-Function-Error: Unhandled
#            and {"errorMessage", "errorType"} as a Lambda runtime posts
#   hang     reads the request and never answers
#   file:F   200 and the bytes of file F, whatever was asked
#   status:N:BODY  status N and BODY
# FLAKY=K (env): the first K requests get 503 before MODE applies.
# TOKEN=T (env): a request without "Authorization: Bearer T" gets 401.
# Every request is logged in DIR/requests as "METHOD PATH BODY".
import http.server
import json
import os
import subprocess
import sys
import threading
import time

DIR, ADDR, CMD = sys.argv[1], sys.argv[2], sys.argv[3:]
MODE = os.environ.get('MODE', 'http')
FLAKY = int(os.environ.get('FLAKY', '0'))
TOKEN = os.environ.get('TOKEN')
NAME = os.environ.get('NAME', 'grad')
lock = threading.Lock()
seen = [0]
STATUS = {0: 200, 64: 400, 65: 422, 66: 404, 75: 503}
TYPES = {64: 'Spirt.Usage', 65: 'Spirt.DataErr', 66: 'Spirt.NoInput',
         69: 'Spirt.Unavailable', 74: 'Spirt.IOErr', 75: 'Spirt.TempFail'}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def reply(self, code, body=b'', headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        n = int(self.headers.get('Content-Length', '0'))
        body = self.rfile.read(n)
        with lock:
            seen[0] += 1
            k = seen[0]
            with open(os.path.join(DIR, 'requests'), 'a') as f:
                f.write('POST %s %s\n' % (self.path, body.decode()))
        if TOKEN is not None and \
                self.headers.get('Authorization') != 'Bearer ' + TOKEN:
            return self.reply(401, b'{"message":"unauthorized"}')
        if k <= FLAKY:
            return self.reply(503, b'busy')
        if MODE == 'hang':
            time.sleep(3600)
            return
        if MODE.startswith('file:'):
            with open(MODE[5:], 'rb') as f:
                return self.reply(200, f.read())
        if MODE.startswith('status:'):
            _, code, text = MODE.split(':', 2)
            return self.reply(int(code), text.encode())
        env = dict(os.environ)
        if MODE == 'lambda':
            want = '/2015-03-31/functions/%s/invocations' % NAME
            if self.path != want:
                return self.reply(404, json.dumps({
                    'Type': 'User', 'Message': 'Function not found: ' +
                    self.path}).encode(), [('X-Amzn-ErrorType',
                                            'ResourceNotFoundException')])
            if self.headers.get('X-Amz-Invocation-Type') != \
                    'RequestResponse':
                return self.reply(400, b'{"Message":"invocation type"}')
            p = subprocess.run(CMD + [body.decode()], env=env,
                               stdin=subprocess.DEVNULL,
                               capture_output=True)
            if p.returncode == 0:
                return self.reply(200, p.stdout)
            err = p.stderr.decode().strip().split('\n')[-1]
            doc = {'errorMessage': err, 'errorType':
                   TYPES.get(p.returncode, 'Spirt.Software'),
                   'stackTrace': []}
            return self.reply(200, json.dumps(doc).encode(),
                              [('X-Amz-Function-Error', 'Unhandled')])
        env['Http_Method'] = 'POST'
        p = subprocess.run(CMD, env=env, input=body, capture_output=True)
        self.reply(STATUS.get(p.returncode, 500), p.stdout)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


srv = Server((ADDR, 0), Handler)
tmp = os.path.join(DIR, 'port.tmp')
with open(tmp, 'w') as f:
    f.write('%d\n' % srv.server_address[1])
os.rename(tmp, os.path.join(DIR, 'port'))
srv.serve_forever()
