"""Chinese, Japanese and Korean: the digits stay, what they count is written out.

The model reads Arabic digits in CJK text natively, and it must: how a number is said there depends on the word after
it (Chinese 两点 but 二度, Japanese 三百 "sanbyaku" and 3時 "sanji", Korean 3시 "se si" with native numbers but 3분
"sam bun" with Sino-Korean ones), which the model learned from text written with digits and a table cannot get right.
What it cannot read from digits is expanded into the way these languages write it: units and symbols after (or
around) the number ("21.5摄氏度", "時速80キロ", "시속 80킬로미터"), clock times ("7点30分", "7時30分", "7시 30분"),
numeric dates ("2026年11月29日", "2026년 11월 29일"), ranges, minus signs and currencies, prices per unit as each
language says them ("0.5元/kWh": "0.5元每千瓦时"; "30円/kWh": "キロワット時あたり30円"; "120원/kWh": "킬로와트시당
120원"), and a unit with no number ("每kWh": "每千瓦时").
"""
from __future__ import annotations

from wyoming_chorus.frontend.normalize.rules import SYMBOLS, Noun, Rules


def _templates(symbols: str, temperature_minus: str | None = None) -> dict[str, Noun]:
    """One template per SYMBOLS entry, in order, "|"-separated; "{n}" is the number (its sign included)."""
    return {symbol: Noun((template,), "", minus=temperature_minus if symbol in ("°C", "°F", "°") else None)
            for symbol, template in zip(SYMBOLS, symbols.split("|"), strict=True)}


def _rules(code: str, minus: str, units: dict[str, Noun], money: dict[str, str], clock: tuple[str, str, str],
           date: str, months: str, year: str, range_: str, per: str, price: str) -> Rules:
    return Rules(code, ".", ",", "[.]", minus, units,
                 money={symbol: (Noun((word,), ""),) * 2 for symbol, word in money.items()},
                 range=range_, months=tuple(months.format(month) for month in range(1, 13)), date=date, year=year,
                 clock=clock, digits_stay=True, per=per, price=price)


CHINESE = _rules(
    "zh", "负", _templates(
        "{n}摄氏度|{n}华氏度|{n}度|百分之{n}|{n}开尔文|每小时{n}公里|每秒{n}米|每小时{n}英里|{n}公里|{n}米|{n}厘米|"
        "{n}毫米|{n}平方米|{n}立方米|{n}公斤|{n}克|{n}升|{n}毫升|{n}千瓦时|{n}瓦时|{n}千瓦|{n}瓦|{n}伏|{n}安|{n}毫安|"
        "{n}赫兹|{n}小时|{n}分钟|{n}秒|{n}毫秒|{n}百帕|{n}毫巴|{n}勒克斯|{n}分贝|百万分之{n}|每立方米{n}微克|"
        "{n}吉字节|{n}兆字节|每秒{n}兆比特", temperature_minus="零下"),
    {"€": "{n}欧元", "$": "{n}美元", "£": "{n}英镑", "¥": "{n}元", "₩": "{n}韩元", "₽": "{n}卢布",
     "CHF": "{n}瑞士法郎", "元": "{n}元"},
    ("{hour}点", "{hour}点{minute}分", "{hour}点{minute}分"), "{year}{month}{day}日", "{}月", "{year}年",
    "{low}到{high}", "每", "{amount}{per}{unit}",
)
JAPANESE = _rules(
    "ja", "マイナス", _templates(
        "{n}度|華氏{n}度|{n}度|{n}パーセント|{n}ケルビン|時速{n}キロ|秒速{n}メートル|時速{n}マイル|{n}キロメートル|"
        "{n}メートル|{n}センチ|{n}ミリ|{n}平方メートル|{n}立方メートル|{n}キログラム|{n}グラム|{n}リットル|"
        "{n}ミリリットル|{n}キロワット時|{n}ワット時|{n}キロワット|{n}ワット|{n}ボルト|{n}アンペア|{n}ミリアンペア|"
        "{n}ヘルツ|{n}時間|{n}分|{n}秒|{n}ミリ秒|{n}ヘクトパスカル|{n}ミリバール|{n}ルクス|{n}デシベル|{n}ピーピーエム|"
        "1立方メートルあたり{n}マイクログラム|{n}ギガバイト|{n}メガバイト|毎秒{n}メガビット"),
    {"€": "{n}ユーロ", "$": "{n}ドル", "£": "{n}ポンド", "¥": "{n}円", "₩": "{n}ウォン", "₽": "{n}ルーブル",
     "CHF": "{n}スイスフラン", "円": "{n}円"},
    ("{hour}時", "{hour}時{minute}分", "{hour}時{minute}分"), "{year}{month}{day}日", "{}月", "{year}年",
    "{low}から{high}", "あたり", "{unit}{per}{amount}",
)
KOREAN = _rules(
    "ko", "마이너스 ", _templates(
        "{n}도|화씨 {n}도|{n}도|{n}퍼센트|{n}켈빈|시속 {n}킬로미터|초속 {n}미터|시속 {n}마일|{n}킬로미터|{n}미터|"
        "{n}센티미터|{n}밀리미터|{n}제곱미터|{n}세제곱미터|{n}킬로그램|{n}그램|{n}리터|{n}밀리리터|{n}킬로와트시|"
        "{n}와트시|{n}킬로와트|{n}와트|{n}볼트|{n}암페어|{n}밀리암페어|{n}헤르츠|{n}시간|{n}분|{n}초|{n}밀리초|"
        "{n}헥토파스칼|{n}밀리바|{n}럭스|{n}데시벨|{n}피피엠|세제곱미터당 {n}마이크로그램|{n}기가바이트|{n}메가바이트|"
        "초당 {n}메가비트", temperature_minus="영하 "),
    {"€": "{n}유로", "$": "{n}달러", "£": "{n}파운드", "¥": "{n}엔", "₩": "{n}원", "₽": "{n}루블",
     "CHF": "{n}스위스 프랑", "원": "{n}원"},
    ("{hour}시", "{hour}시 {minute}분", "{hour}시 {minute}분"), "{year}{month} {day}일", "{}월", "{year}년 ",
    "{low}에서 {high}", "당", "{unit}{per} {amount}",
)
